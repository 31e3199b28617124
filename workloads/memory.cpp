#include "workloads/memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <deque>
#include <fmt/format.h>

#include "core/units.hpp"
#include "workloads/helper.hpp"

namespace rig {

const option_table& memory_workload_options() {
  static const option_table t = with_cgroup_option({
      {.name = "rate", .type = opt_type::byte_rate, .default_text = "",
       .help = "bytes allocated and touched per second, in total (e.g. \"100MB/s\"), open loop", .min = 1,
       .max = 1e12, .required = true},
      {.name = "chunk", .type = opt_type::size, .default_text = "\"1MiB\"",
       .help = "bytes per allocation (one operation): mapped, then every page written", .min = 4096,
       .max = 1e10},
      {.name = "hold", .type = opt_type::duration, .default_text = "\"1s\"",
       .help = "how long each chunk is held before it is released (held memory levels off at rate × hold)",
       .min = 0, .max = 86400e9},
      {.name = "max_held", .type = opt_type::size, .default_text = "",
       .help = "never hold more than this: allocations wait (and count as late) until chunks are released",
       .min = 4096, .max = 1e13},
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads allocating, each with its share of the rate", .min = 1, .max = 256},
      {.name = "arrival", .type = opt_type::string, .default_text = "\"uniform\"",
       .help = "evenly spaced allocations, or a Poisson process at the same mean rate", .allowed = {"uniform", "poisson"}},
  });
  return t;
}

void check_memory_workload(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.has("max_held") && v.has("chunk") && v.bytes("max_held") < v.bytes("chunk"))
    diags.add(v.where("max_held"), "'max_held' in " + ctx.section + " is smaller than one 'chunk'");
}

namespace {
load_model chunks_per_second(const option_values& v) {
  load_model m;
  m.rate = v.per_second("rate") / double(v.bytes("chunk"));
  if (v.str("arrival") == "poisson") m.arrival = load_model::arrivals::poisson;
  return m;
}
}  // namespace

memory_workload::memory_workload(const option_values& v)
    : threaded_workload(v, int(v.integer("threads")), chunks_per_second(v)),
      chunk_(v.bytes("chunk")),
      max_held_(v.has("max_held") ? v.bytes("max_held") : 0),
      hold_ns_(v.duration_ns("hold")) {}

void memory_workload::run(worker_threads::worker& w) {
  struct held_chunk {
    void* p;
    int64_t release_at;
  };
  std::deque<held_chunk> held;  // oldest first
  auto release_oldest = [&] {
    ::munmap(held.front().p, chunk_);
    held_ -= chunk_;
    held.pop_front();
  };
  auto plan = pacer_for(w);
  const long page = ::sysconf(_SC_PAGESIZE);
  run_paced(
      *w.rec, &*plan, stopping_,
      [&]() -> std::optional<error_kind> {
        // Over max_held: this allocation waits for the oldest chunk's release.
        while (max_held_ && held_.load() + chunk_ > max_held_ && !held.empty()) {
          if (stopping_.load()) return error_kind::timeout;
          const int64_t wait = held.front().release_at - mono_ns();
          if (wait > 0) {
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(wait, 10 * ns_per_ms)));
            w.rec->tick(mono_ns());  // a second or a phase may end while this allocation waits
            continue;
          }
          release_oldest();
        }
        rusage before{}, after{};
        ::getrusage(RUSAGE_THREAD, &before);
        void* p = ::mmap(nullptr, chunk_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return error_kind::rejected;  // the kernel refused the memory
        for (uint64_t off = 0; off < chunk_; off += uint64_t(page)) static_cast<volatile char*>(p)[off] = 1;
        ::getrusage(RUSAGE_THREAD, &after);
        w.rec->count("minor_faults", uint64_t(after.ru_minflt - before.ru_minflt));
        w.rec->count("major_faults", uint64_t(after.ru_majflt - before.ru_majflt));
        w.rec->count("bytes_allocated", chunk_);
        held.push_back({p, mono_ns() + hold_ns_});
        held_ += chunk_;
        return std::nullopt;
      },
      [&] {
        const int64_t now = mono_ns();
        while (!held.empty() && held.front().release_at <= now) release_oldest();
      });
  while (!held.empty()) release_oldest();
}

nlohmann::json memory_workload::describe() const {
  return {{"kind", "memory"},
          {"load_model", load_.describe()},
          {"chunk_bytes", chunk_},
          {"params", opts_.to_json()}};
}

}  // namespace rig
