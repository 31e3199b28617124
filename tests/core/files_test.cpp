// core/files: the one way rig writes a file at a path a user gave (a new file renamed into
// place; a link, a non-regular file or another user's file refused) and reads an input (a
// regular file within its cap; a FIFO never blocks). The attacks through the CLI are in
// tests/e2e/trust_test.cpp; here each rule on its own.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../helpers.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

mode_t mode_of(const std::string& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// The names in a directory (the temporary file of a write must not stay).
size_t entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("write_user_file: a new file is 0644, a file replaced keeps its mode, nothing else is left beside it") {
  temp_dir tmp;
  const std::string f = tmp.path + "/out.xml";
  write_user_file(f, "one");
  CHECK(slurp(f) == "one");
  CHECK(mode_of(f) == 0644);
  ::chmod(f.c_str(), 0600);
  write_user_file(f, "two");
  CHECK(slurp(f) == "two");
  CHECK(mode_of(f) == 0600);
  CHECK(entries(tmp.path) == 1);
  // A second name for the file (a hard link): the write replaces the name, the other keeps the old text.
  REQUIRE(::link(f.c_str(), (tmp.path + "/other").c_str()) == 0);
  write_user_file(f, "three");
  CHECK(slurp(f) == "three");
  CHECK(slurp(tmp.path + "/other") == "two");
  CHECK(user_file_refusal(f).empty());
  CHECK(user_file_refusal(tmp.path + "/new-name").empty());
}

TEST_CASE("write_user_file: a link, a FIFO or a directory at the name is refused and left as it was") {
  temp_dir tmp;
  const std::string victim = tmp.path + "/victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, tmp.path + "/link");
  REQUIRE(::mkfifo((tmp.path + "/fifo").c_str(), 0600) == 0);
  fs::create_directory(tmp.path + "/dir");
  for (const auto& [name, kind] : std::vector<std::pair<std::string, std::string>>{
           {"link", "a symbolic link"}, {"fifo", "a FIFO"}, {"dir", "a directory"}}) {
    const std::string p = tmp.path + "/" + name;
    INFO(p);
    CHECK(user_file_refusal(p).find(p + " is " + kind) != std::string::npos);
    try {
      write_user_file(p, "x");
      FAIL("written");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find(p + " is " + kind) != std::string::npos);
    }
  }
  CHECK(slurp(victim) == "precious");
  CHECK(fs::is_symlink(tmp.path + "/link"));
  CHECK(fs::is_fifo(tmp.path + "/fifo"));
  CHECK(entries(tmp.path) == 4);  // no temporary file left
  CHECK(user_file_refusal(tmp.path + "/no-such-dir/x").find("no-such-dir") != std::string::npos);
}

TEST_CASE("write_user_file: another user's file is refused, not replaced (root)") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root (a file of another user)");
    return;
  }
  temp_dir tmp;
  const std::string f = tmp.path + "/theirs";
  std::ofstream(f) << "theirs";
  REQUIRE(::chown(f.c_str(), 54321, 54321) == 0);
  CHECK(user_file_refusal(f).find("belongs to uid 54321") != std::string::npos);
  CHECK_THROWS_WITH_AS(write_user_file(f, "x"), doctest::Contains("belongs to uid 54321"), std::runtime_error);
  CHECK(slurp(f) == "theirs");
}

TEST_CASE("read_input_file: a regular file within the cap is read, and a FIFO, a device, a directory or past the cap is refused at once") {
  temp_dir tmp;
  const input_kind small{"a test file", 16};
  std::ofstream(tmp.path + "/ok") << "0123456789";
  CHECK(read_input_file(tmp.path + "/ok", small) == "0123456789");
  std::ofstream(tmp.path + "/big") << std::string(17, 'x');
  CHECK_THROWS_WITH_AS(read_input_file(tmp.path + "/big", small),
                       doctest::Contains("big is 17B: a test file may be at most 16B (16 bytes)"), input_error);
  REQUIRE(::mkfifo((tmp.path + "/fifo").c_str(), 0600) == 0);  // nothing writes to it: opening it would block
  CHECK_THROWS_WITH_AS(read_input_file(tmp.path + "/fifo", small), doctest::Contains("fifo is a FIFO, not a test file"),
                       input_error);
  CHECK_THROWS_WITH_AS(read_input_file("/dev/zero", small), doctest::Contains("/dev/zero is a device"), input_error);
  CHECK_THROWS_WITH_AS(read_input_file(tmp.path, small), doctest::Contains("is a directory"), input_error);
  CHECK_THROWS_WITH_AS(read_input_file(tmp.path + "/none", small), doctest::Contains("none: cannot read a test file"),
                       input_error);
  // In a directory held open, a link is never followed.
  fs::create_symlink(tmp.path + "/ok", tmp.path + "/link");
  const unique_fd d(::open(tmp.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  CHECK(read_input_at(d.get(), tmp.path, "ok", small) == "0123456789");
  CHECK_THROWS_WITH_AS(read_input_at(d.get(), tmp.path, "link", small), doctest::Contains("is a symbolic link"),
                       input_error);
  CHECK_FALSE(read_input_if_present(d.get(), tmp.path, "none", small));
}
