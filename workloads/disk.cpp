#include "workloads/disk.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/error.hpp"
#include "core/fd.hpp"
#include "core/units.hpp"
#include "workloads/helper.hpp"

namespace rig {

const option_table& disk_workload_options() {
  static const option_table t = with_cgroup_option(with_load_options({
      {.name = "path", .type = opt_type::string, .default_text = "",
       .help = "the file to do I/O on (absent: disk-workload.dat in the run directory, made, filled and removed "
               "by rig)"},
      {.name = "mode", .type = opt_type::string, .default_text = "\"randread\"",
       .help = "read and write are sequential; randread, randwrite and randrw pick blocks uniformly",
       .allowed = {"read", "write", "randread", "randwrite", "randrw"}},
      {.name = "block_size", .type = opt_type::size, .default_text = "\"4KiB\"",
       .help = "bytes per operation (a multiple of 512 with direct I/O)", .min = 512, .max = 64.0 * 1048576},
      {.name = "iodepth", .type = opt_type::integer, .default_text = "1",
       .help = "operations in flight per thread", .min = 1, .max = 4096},
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads, each with its own io_uring", .min = 1, .max = 64},
      {.name = "direct", .type = opt_type::boolean, .default_text = "true",
       .help = "O_DIRECT: past the page cache to the device"},
      {.name = "file_size", .type = opt_type::size, .default_text = "\"64MiB\"",
       .help = "the file's size: rig's own file is made this large and filled once", .min = 4096, .max = 1e13},
      {.name = "fsync_every", .type = opt_type::integer, .default_text = "0",
       .help = "an fsync after this many writes (0: never)", .min = 0, .max = 1e9},
      {.name = "read_share", .type = opt_type::percent, .default_text = "\"50%\"",
       .help = "randrw: the share of operations that read", .min = 0, .max = 1},
  }, false));
  return t;
}

void check_disk_workload(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_load_model(v, ctx, diags);
  if (v.has("block_size") && v.boolean("direct") && v.bytes("block_size") % 512 != 0)
    diags.add(v.where("block_size"), fmt::format("'block_size' in {} is {}: direct I/O needs a multiple of 512 bytes",
                                                 ctx.section, v.text("block_size")));
  if (v.has("file_size") && v.has("block_size") && v.bytes("file_size") < v.bytes("block_size"))
    diags.add(v.where("file_size"), "'file_size' in " + ctx.section + " is smaller than one block");
  if (v.is_set("read_share") && v.str("mode") != "randrw")
    diags.add(v.where("read_share"), "'read_share' in " + ctx.section + " applies to mode = \"randrw\" only");
}

disk_workload::disk_workload(const option_values& v)
    : threaded_workload(v, int(v.integer("threads")), load_model::from(v)) {
  mode_ = v.str("mode");
  block_ = uint32_t(v.bytes("block_size"));
  iodepth_ = int(v.integer("iodepth"));
  direct_ = v.boolean("direct");
  file_size_ = v.bytes("file_size") / block_ * block_;
  fsync_every_ = v.integer("fsync_every");
  read_share_ = mode_ == "randrw" ? v.fraction("read_share") : (mode_.find("read") != std::string::npos ? 1.0 : 0.0);
  if (v.has("path")) path_ = v.str("path");
}

void disk_workload::prepare(const workload_env& env) {
  if (path_.empty()) path_ = (env.run_dir.empty() ? std::string("/tmp") : env.run_dir) + "/disk-workload.dat";
  // A given path: a regular file of this user, reached by no other user's link into someone
  // else's directory (as root, a planted link would have had rig write another's file).
  if (const std::string why = user_data_file_refusal(path_); !why.empty())
    throw std::runtime_error("disk workload: 'path' " + why);
  // The file: rig's own is made and filled once; a given one must be large enough.
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (!exists || uint64_t(st.st_size) < file_size_) {
    if (exists && opts_.has("path"))
      throw std::runtime_error(fmt::format("disk workload: {} has {} bytes, fewer than file_size {}", path_,
                                           st.st_size, file_size_));
    unique_fd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
    throw_system_error_on(!fd, "disk workload: create " + path_);
    created_ = true;
    std::vector<char> chunk(1 << 20);
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = char(i * 2654435761u >> 24);  // not all zeros
    for (uint64_t off = 0; off < file_size_;) {
      const size_t n = size_t(std::min<uint64_t>(chunk.size(), file_size_ - off));
      throw_system_error_on(::pwrite(fd.get(), chunk.data(), n, off_t(off)) != ssize_t(n), "disk workload: fill " + path_);
      off += n;
    }
    throw_system_error_on(::fsync(fd.get()) != 0, "disk workload: fsync " + path_);
  }
  if (direct_) {  // refuse up front where the file system has no direct I/O (tmpfs)
    unique_fd probe(::open(path_.c_str(), O_RDONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC));
    throw_system_error_on(!probe, "disk workload: open " + path_ + " with O_DIRECT",
                          "the file system must support direct I/O (tmpfs does not); or set direct = false");
  }
}

void disk_workload::finish() noexcept {
  if (created_) ::unlink(path_.c_str());
}

namespace {
constexpr uint64_t fsync_tag = ~0ull;

struct slot {
  bool busy = false, write = false;
  int64_t intended = 0, sent = 0;
  int64_t free_ns = 0;  // when the slot last came back
};

// One thread's file on its own ring, set up as fio sets its rings up, with one buffer per
// slot; registered file and buffers where the kernel allows (fewer lookups per operation),
// plain ones where it does not (a low RLIMIT_MEMLOCK on older kernels).
struct uring_file {
  unique_fd fd;
  io_uring ring{};
  bool ring_ok = false, fixed_file = false, fixed_bufs = false;
  int raw_fd = -1;
  size_t block = 0;
  std::vector<void*> bufs;

  bool open(const std::string& path, bool direct, int iodepth, size_t block_size) {
    block = block_size;
    fd = unique_fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | (direct ? O_DIRECT : 0)));
    if (!fd) return false;
    // No IPI per completion, task work run when we reap; plain flags where the kernel has none.
    io_uring_params params{};
    params.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    ring_ok = io_uring_queue_init_params(unsigned(iodepth + 1), &ring, &params) == 0;
    if (!ring_ok) {
      params = {};
      ring_ok = io_uring_queue_init_params(unsigned(iodepth + 1), &ring, &params) == 0;
    }
    if (!ring_ok) return false;
    bufs.resize(size_t(iodepth));
    std::vector<iovec> iov(static_cast<size_t>(iodepth));
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (::posix_memalign(&bufs[i], 4096, block) != 0) bufs[i] = nullptr;
      if (bufs[i]) std::memset(bufs[i], 0x5a, block);
      iov[i] = {bufs[i], block};
    }
    raw_fd = fd.get();
    fixed_file = io_uring_register_files(&ring, &raw_fd, 1) == 0;
    fixed_bufs = io_uring_register_buffers(&ring, iov.data(), unsigned(iodepth)) == 0;
    return true;
  }
  ~uring_file() {
    if (ring_ok) io_uring_queue_exit(&ring);
    for (void* b : bufs) std::free(b);
  }

  // Slot i's read or write of one block at offset, tagged with i.
  void prep(int i, bool write, uint64_t offset) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    const int target = fixed_file ? 0 : raw_fd;
    void* buf = bufs[size_t(i)];
    if (fixed_bufs) {
      if (write) io_uring_prep_write_fixed(sqe, target, buf, unsigned(block), offset, i);
      else io_uring_prep_read_fixed(sqe, target, buf, unsigned(block), offset, i);
    } else {
      if (write) io_uring_prep_write(sqe, target, buf, unsigned(block), offset);
      else io_uring_prep_read(sqe, target, buf, unsigned(block), offset);
    }
    if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, uint64_t(i));
  }
  // An fsync after every write before it, submitted now.
  void submit_fsync() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_fsync(sqe, fixed_file ? 0 : raw_fd, 0);
    sqe->flags |= IOSQE_IO_DRAIN | (fixed_file ? IOSQE_FIXED_FILE : 0);
    io_uring_sqe_set_data64(sqe, fsync_tag);
    io_uring_submit(&ring);
  }
};
}  // namespace

void disk_workload::run(worker_threads::worker& w) {
  thread_recorder& rec = *w.rec;
  uring_file f;
  if (!f.open(path_, direct_, iodepth_, block_)) {
    std::cerr << "rig: disk workload: cannot set up io_uring on " << path_ << ": " << strerror(errno) << "\n";
    rec.error(error_kind::connect, mono_ns());
    return;
  }
  std::vector<slot> slots(static_cast<size_t>(iodepth_));
  const uint64_t blocks = file_size_ / block_;
  const uint64_t stream = stream_for("disk.blocks", w);
  uint64_t draws = 0;
  auto next_rand = [&] { return rig_draw(stream, draws++); };
  uint64_t seq_block = blocks * uint64_t(w.index) / uint64_t(threads_);
  auto plan = pacer_for(w);  // open loop: this thread's share of the rate
  int64_t next_intended = 0;
  if (plan) {
    next_intended = plan->next();
    for (auto& s : slots) s.free_ns = mono_ns();
  }
  int inflight = 0;
  int64_t writes_since_fsync = 0, last_tick = 0;
  bool fsync_inflight = false;
  const bool random = mode_.rfind("rand", 0) == 0;

  std::vector<int> queued;
  queued.reserve(size_t(iodepth_));
  auto reap = [&](io_uring_cqe* cqe) {
    const uint64_t id = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&f.ring, cqe);
    const int64_t done = mono_ns();
    if (id == fsync_tag) {
      fsync_inflight = false;
      if (res < 0) rec.error(error_kind::write, done);
      return;
    }
    slot& s = slots[size_t(id)];
    s.busy = false;
    --inflight;
    if (res != int(block_)) rec.error(s.write ? error_kind::write : error_kind::read, done, 0, s.intended);
    else rec.record(s.intended, s.sent, done, generator_lag_ns(s.intended, s.free_ns, s.sent));
    s.free_ns = done;
    if (s.write && fsync_every_ && ++writes_since_fsync >= fsync_every_) {
      writes_since_fsync = 0;
      f.submit_fsync();
      fsync_inflight = true;
    }
  };

  while (!stopping_.load(std::memory_order_relaxed)) {
    int64_t now = mono_ns();
    queued.clear();
    for (int i = 0; i < iodepth_ && !fsync_inflight; ++i) {
      if (slots[size_t(i)].busy) continue;
      int64_t intended = now;
      if (plan) {
        if (next_intended > now) break;
        intended = next_intended;  // a backlog keeps its intended times: latency counts the wait
        next_intended = plan->next();
      }
      const bool write = read_share_ < 1.0 && (read_share_ <= 0.0 || double(next_rand() % 1000000) >= read_share_ * 1e6);
      uint64_t block;
      if (random) {
        block = next_rand() % blocks;
      } else {
        block = seq_block;
        seq_block = (seq_block + 1) % blocks;
      }
      f.prep(i, write, block * block_);
      slots[size_t(i)].busy = true;
      slots[size_t(i)].write = write;
      slots[size_t(i)].intended = intended;
      ++inflight;
      queued.push_back(i);
    }
    // Submit what was queued without waiting (as fio does: a completion already there is
    // reaped without a sleep), then, only when none is, wait for one, the next intended
    // submission, or 10 ms (to see stop and tick).
    const int64_t sent = mono_ns();
    for (int i : queued) {
      slot& s = slots[size_t(i)];
      s.sent = sent;
      if (!plan) s.intended = sent;  // closed loop: no schedule to lag behind (and no generator lag)
    }
    int64_t wait_ns = 10 * ns_per_ms;
    if (plan && !fsync_inflight && inflight < iodepth_) wait_ns = std::clamp<int64_t>(next_intended - sent, 0, wait_ns);
    io_uring_cqe* cqe = nullptr;
    if (inflight > 0 || fsync_inflight) {
      __kernel_timespec ts{wait_ns / ns_per_s, wait_ns % ns_per_s};
      if (!queued.empty()) io_uring_submit(&f.ring);
      if (wait_ns > 0 && io_uring_peek_cqe(&f.ring, &cqe) != 0) io_uring_wait_cqe_timeout(&f.ring, &cqe, &ts);
      while (io_uring_peek_cqe(&f.ring, &cqe) == 0) reap(cqe);
    } else if (wait_ns > 0) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
    }
    now = mono_ns();
    if (now - last_tick >= ns_per_ms) {
      int64_t hold = plan ? next_intended : INT64_MAX;  // the slots in flight and the schedule's next
      for (const auto& s : slots)
        if (s.busy) hold = std::min(hold, s.intended);
      rec.hold_from(hold);
      rec.tick(now);
      last_tick = now;
    }
  }
  // Let the operations in flight finish before the buffers go (with f).
  while (inflight > 0 || fsync_inflight) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&f.ring, &cqe) != 0) break;
    reap(cqe);
  }
  if (plan) not_taken_at_end(rec, *plan, next_intended);
}

nlohmann::json disk_workload::describe() const {
  return {{"kind", "disk"},
          {"engine", "io_uring"},
          {"path", path_},
          {"load_model", load_.describe()},
          {"params", opts_.to_json()}};
}

}  // namespace rig
