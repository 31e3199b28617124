#pragma once
// Toxics as types, the way Toxiproxy has them: each toxic is one file in this folder with
// its own option table, its chunk transform (the hooks below), its counters, and what it
// needs of the hop between the workloads and the proxy. Adding one: a file here and a line
// in registry.cpp; the proxy and the controller know no toxic by name.
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/draw.h"

#include "core/options.hpp"

namespace rig {

// One direction of one proxied connection, as one toxic sees it.
struct toxic_flow {
  draw_stream& rng;  // the connection's, from the run's seed
  uint64_t passed;       // bytes written on in this direction so far
  int64_t& mark_ns;      // this toxic's own mark on this flow (bandwidth: paced until then)
};

// One chunk the proxy read, as the toxics decide its fate in chain order.
struct toxic_chunk {
  int64_t arrived_ns = 0;    // when the proxy read it
  int64_t due_ns = 0;        // held until then (latency moves it later)
  size_t size = 0;           // bytes to pass on (limit_data cuts it)
  bool drop = false;         // pass nothing on (timeout)
  bool close_after = false;  // close the connection once it is written (limit_data)
};

// How a connection the toxic affects ends, counted from when it first meets the toxic.
struct connection_end {
  int64_t after_ns = 0;
  bool reset = false;  // with RST (reset_peer), else a plain close (timeout)
};

class toxic {
 public:
  toxic(std::string name, const option_values& v);  // the proxy's keys: stream, toxicity
  virtual ~toxic() = default;
  toxic(const toxic&) = delete;
  toxic& operator=(const toxic&) = delete;

  virtual std::string_view type() const = 0;
  virtual std::string params_text() const = 0;  // its own settings: "10ms ±1ms"
  std::string str() const;                      // "latency 10ms ±1ms downstream, toxicity 1"
  const std::string& name() const { return name_; }  // the injector's name in the scenario
  bool acts_on(bool downstream) const { return downstream ? downstream_ : upstream_; }
  double toxicity() const { return toxicity_; }

  // The transform. The proxy calls these on its loop, one chunk at a time per direction,
  // for the toxics in chain order that act on the direction and affect the connection.
  // A connection ends after a while (timeout, reset_peer): asked when it first meets the toxic.
  virtual std::optional<connection_end> ends() const { return std::nullopt; }
  virtual void on_end() {}  // the connection ended by this toxic
  // A chunk's fate; when due_ns moved later the proxy holds the chunk until then, then says held().
  virtual void on_chunk(toxic_chunk&, toxic_flow&) {}
  virtual void held(const toxic_chunk&, int64_t now_ns) {}
  // Writing a chunk: the largest next piece (slicer, bandwidth; asked once per piece), when
  // it may go (bandwidth), and the pause after it when more follows (slicer).
  virtual size_t piece_limit(toxic_flow&) { return std::numeric_limits<size_t>::max(); }
  virtual int64_t piece_due_ns(size_t piece, const toxic_chunk&, toxic_flow&, int64_t now_ns) { return 0; }
  virtual int64_t piece_written(bool more) { return 0; }
  // The end of the stream: how long its close is held back (slow_close).
  virtual int64_t close_delay_ns() const { return 0; }

  // What it did, counted by the proxy: the measured side of verification. Every toxic has
  // connections_affected/spared, chunks and bytes; its own counters come from add_counters.
  nlohmann::json counters() const;
  std::atomic<uint64_t> affected{0}, spared{0}, chunks{0}, bytes{0};

 protected:
  virtual void add_counters(nlohmann::json&) const {}

 private:
  std::string name_;
  bool upstream_ = false, downstream_ = true;
  double toxicity_ = 1.0;
};

// A kind of toxic: all the proxy and the scenario language know of it.
struct toxic_kind {
  std::string_view name;
  std::string_view summary;
  const option_table& (*options)();  // its own keys (the proxy injector adds toxic, stream, toxicity)
  std::unique_ptr<toxic> (*make)(std::string name, const option_values&);
  bool needs_tcp = false;  // of the hop from the workloads: a reset only TCP carries (a socket pair closes)
};

const std::vector<toxic_kind>& toxic_kinds();
inline const toxic_kind* find_toxic_kind(std::string_view name) { return find_kind(toxic_kinds(), name); }

// The toxic a proxy injector's options name (the key "toxic"), bound against proxy_options().
std::unique_ptr<toxic> make_toxic(std::string name, const option_values& v);

// Uniform in [-1, 1): a toxic's +/- spread.
inline double spread(draw_stream& rng) { return rng.unit() * 2 - 1; }

// Durations as a toxic describes itself.
std::string toxic_duration(int64_t ns);

// A kind whose toxic takes its name and options as they are.
template <class T>
std::unique_ptr<toxic> make_as(std::string name, const option_values& v) {
  return std::make_unique<T>(std::move(name), v);
}

}  // namespace rig
