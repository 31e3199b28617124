/* rig's random draws, one piece of code for rig (C++) and the libraries it loads into targets
   (the failpoint library, the preload shim; plain C). Every random choice of a run is a pure
   function of the scenario's seed, the name of the stream that makes it (a workload's arrivals,
   a failpoint, the proxy's connections) and a counter: the same seed and the same sequence of
   calls make the same choices, on any host. No draw reads a clock, a pid or an address.

     stream = rig_stream_seed(seed, "failpoint.wal.fsync", 0);   once
     x      = rig_draw(stream, n);                                the n-th draw, n = 0, 1, 2, ...

   The draws are SplitMix64 (Steele, Lea, Flood 2014): rig_draw(s, n) is the n-th output of a
   SplitMix64 generator started at s, so a stream is that generator and n its position. */
#ifndef RIG_DRAW_H
#define RIG_DRAW_H
#include <stdint.h>

#define RIG_DRAW_GAMMA 0x9E3779B97F4A7C15ull

/* SplitMix64's output function (a bijection of 64 bits). */
static inline uint64_t rig_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The n-th draw of a stream: uniform over 64 bits. */
static inline uint64_t rig_draw(uint64_t stream, uint64_t n) { return rig_mix64(stream + (n + 1) * RIG_DRAW_GAMMA); }

/* The n-th draw as a double in (0, 1]: never 0, so -log(u) is finite. */
static inline double rig_draw_unit(uint64_t stream, uint64_t n) {
  return ((double)(rig_draw(stream, n) >> 11) + 1.0) / 9007199254740992.0;
}

/* A stream's starting point: the run's seed, the stream's name (FNV-1a) and an index (a thread,
   a connection, a process), mixed so that neighbouring seeds and indexes give unrelated streams. */
static inline uint64_t rig_stream_seed(uint64_t seed, const char* name, uint64_t index) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; name && *name; ++name) h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
  return rig_mix64(rig_mix64(seed + RIG_DRAW_GAMMA) ^ h) + rig_mix64((index + 1) * RIG_DRAW_GAMMA);
}

#ifdef __cplusplus
namespace rig {
/* One stream drawn in order (a proxied connection's, a bootstrap's): the same numbers from the
   same seed with any compiler and standard library (std::uniform_*_distribution are not). */
struct draw_stream {
  uint64_t stream;
  uint64_t next = 0;
  explicit draw_stream(uint64_t s) : stream(s) {}
  double unit() { return rig_draw_unit(stream, next++); }     /* (0, 1] */
  uint64_t below(uint64_t n) { return rig_draw(stream, next++) % n; } /* [0, n); bias < n / 2^64 */
};
}  // namespace rig
#endif

#endif
