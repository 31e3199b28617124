// rig's disk workload against fio's io_uring engine on the same file, alternated in one
// run: randread 4 KiB, iodepth 32, O_DIRECT. Prints both IOPS and the ratio (goal >= 0.95),
// medians over the repeats.
//   build/bench/disk_bench [repeats=5] [seconds=3] [dir=/var/tmp]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench.hpp"
#include "core/clock.hpp"
#include "core/process.hpp"
#include "workloads/disk.hpp"

using namespace rig;

namespace {

double rig_iops(const std::string& file, int seconds) {
  return double(rig::bench::one_phase<disk_workload>(
                    disk_workload_options(),
                    fmt::format("path = \"{}\"\nmode = \"randread\"\niodepth = 32\nblock_size = \"4KiB\"\nfile_size = "
                                "\"256MiB\"\n",
                                file),
                    {"bench", "", 0}, seconds * 1000)
                    .ops) /
         seconds;
}

double fio_iops(const std::string& fio, const std::string& file, int seconds) {
  auto c = child_process::spawn({.argv = {fio, "--name=randread", "--filename=" + file, "--rw=randread", "--bs=4k",
                                          "--iodepth=32", "--direct=1", "--ioengine=io_uring", "--size=256M",
                                          "--ramp_time=300ms", fmt::format("--runtime={}s", seconds), "--time_based",
                                          "--output-format=json"},
                                 .capture_stdout = true});
  std::string out;
  while (auto line = c.read_line(60'000)) out += *line + "\n";
  c.wait(10'000);
  const auto j = nlohmann::json::parse(out.substr(out.find('{')));
  return j["jobs"][0]["read"]["iops"].get<double>();
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string dir = argc > 3 ? argv[3] : "/var/tmp";
  const std::string fio = find_in_path("fio");
  if (fio.empty()) {
    fmt::print(stderr, "disk_bench: fio is not installed (apt-get install fio)\n");
    return 3;
  }
  const std::string file = dir + "/rig-disk-bench.dat";
  {
    // One file for both, written once in full (so neither reads holes).
    std::vector<char> chunk(1 << 20, 'r');
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 256; ++i) (void)!::write(fd, chunk.data(), chunk.size());
    ::fsync(fd);
    ::close(fd);
  }
  const auto c = rig::bench::alternate(
      repeats, "fio", [&] { return fio_iops(fio, file, seconds); }, [&] { return rig_iops(file, seconds); },
      [](double v) { return fmt::format("{:.0f} IOPS", v); });
  fmt::print("disk randread 4 KiB, iodepth 32, O_DIRECT, io_uring: fio {:.0f} IOPS, rig {:.0f} IOPS (medians), ratio "
             "{:.3f} (goal >= 0.95: {})\n",
             c.peer, c.rig, c.ratio, c.ratio >= 0.95 ? "met" : "MISSED");
  std::filesystem::remove(file);
}
