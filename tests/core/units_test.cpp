#include <doctest/doctest.h>

#include <cmath>

#include "core/units.hpp"

using namespace rig;

TEST_CASE("durations in every unit") {
  CHECK(*parse_duration_ns("250ms") == 250'000'000);
  CHECK(*parse_duration_ns("1.5s") == 1'500'000'000);
  CHECK(*parse_duration_ns("10us") == 10'000);
  CHECK(*parse_duration_ns("10µs") == 10'000);
  CHECK(*parse_duration_ns("7ns") == 7);
  CHECK(*parse_duration_ns("2min") == 120'000'000'000);
  CHECK(*parse_duration_ns("1h") == 3'600'000'000'000);
  CHECK(*parse_duration_ns("0us") == 0);
  CHECK(*parse_duration_ns(" 3 ms ") == 3'000'000);
  CHECK(*parse_duration_ns("1_000ms") == 1'000'000'000);
}

TEST_CASE("durations: every error form says what was expected") {
  std::string why;
  CHECK_FALSE(parse_duration_ns("250", &why));
  CHECK(why.find("missing unit") != std::string::npos);
  CHECK_FALSE(parse_duration_ns("250 parsecs", &why));
  CHECK(why.find("unknown unit 'parsecs'") != std::string::npos);
  CHECK_FALSE(parse_duration_ns("fast", &why));
  CHECK(why == "no number");
  CHECK_FALSE(parse_duration_ns("-5ms", &why));
  CHECK(why == "negative value");
  CHECK_FALSE(parse_duration_ns("", &why));
  CHECK(why == "empty value");
  CHECK_FALSE(parse_duration_ns("1.2.3s", &why));
  CHECK(why.find("bad number") != std::string::npos);
}

TEST_CASE("sizes, decimal and binary") {
  CHECK(*parse_size_bytes("64B") == 64);
  CHECK(*parse_size_bytes("64KiB") == 65536);
  CHECK(*parse_size_bytes("64KB") == 64000);
  CHECK(*parse_size_bytes("1.5MiB") == 1572864);
  CHECK(*parse_size_bytes("2GiB") == 2147483648ull);
  CHECK(*parse_size_bytes("1MB") == 1000000);
  std::string why;
  CHECK_FALSE(parse_size_bytes("64", &why));
  CHECK(why.find("missing unit") != std::string::npos);
  CHECK_FALSE(parse_size_bytes("64kb", &why));
  CHECK(why.find("unknown unit 'kb'") != std::string::npos);
}

TEST_CASE("rates: operations and bandwidth") {
  CHECK(*parse_op_rate("2000/s") == 2000);
  CHECK(*parse_op_rate("2k/s") == 2000);
  CHECK(*parse_op_rate("60/min") == doctest::Approx(1.0));
  CHECK(*parse_byte_rate("10MB/s") == 10e6);
  CHECK(*parse_byte_rate("10Mbit/s") == doctest::Approx(1.25e6));
  CHECK(*parse_byte_rate("1Gbit/s") == doctest::Approx(125e6));
  CHECK(*parse_byte_rate("100KiB/s") == 102400);
  std::string why;
  CHECK_FALSE(parse_op_rate("2000", &why));
  CHECK(why.find("missing unit") != std::string::npos);
  CHECK_FALSE(parse_byte_rate("10MB", &why));
  CHECK(why.find("unknown unit 'MB'") != std::string::npos);
}

TEST_CASE("percentages") {
  CHECK(*parse_percent("25%") == doctest::Approx(0.25));
  CHECK(*parse_percent("0.5%") == doctest::Approx(0.005));
  std::string why;
  CHECK_FALSE(parse_percent("25", &why));
  CHECK(why.find("missing unit") != std::string::npos);
}

TEST_CASE("human-readable forms carry units") {
  CHECK(format_duration_us(87.04) == "87.0us");
  CHECK(format_duration_us(44100) == "44.10ms");
  CHECK(format_duration_us(1.2e6) == "1.20s");
  CHECK(format_bytes(512) == "512B");
  CHECK(format_bytes(65536) == "64.0KiB");
  CHECK(format_count(1234567) == "1,234,567");
  CHECK(format_count(12) == "12");
  CHECK(format_duration_us(NAN) == "-");  // no value
  CHECK(format_count(NAN) == "-");
}
