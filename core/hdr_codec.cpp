#include "core/hdr_codec.hpp"

#include <zlib.h>

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "core/clock.hpp"

namespace rig {

namespace {

constexpr uint32_t v2_cookie = 0x1c849303 | 0x10;             // the V2 encoding (LEB128 counts)
constexpr uint32_t v2_compressed_cookie = 0x1c849304 | 0x10;  // ... deflated
constexpr int significant_digits = 3;

void put32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(char((v >> s) & 0xff));
}
void put64(std::string& out, uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) out.push_back(char((v >> s) & 0xff));
}
uint64_t get(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | uint8_t(in[at + size_t(i)]);
  return v;
}

// ZigZag, then LEB128 of at most 9 bytes: eight of 7 bits, the ninth all 8 (HdrHistogram's).
void put_varint(std::string& out, int64_t value) {
  uint64_t v = (uint64_t(value) << 1) ^ uint64_t(value >> 63);
  for (int i = 0; i < 8; ++i) {
    if (v < 0x80) {
      out.push_back(char(v));
      return;
    }
    out.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v & 0xff));
}

std::optional<int64_t> get_varint(std::string_view in, size_t& at) {
  uint64_t v = 0;
  for (int i = 0; i < 9; ++i) {
    if (at >= in.size()) return std::nullopt;
    const uint8_t b = uint8_t(in[at++]);
    if (i == 8) {
      v |= uint64_t(b) << 56;
      break;
    }
    v |= uint64_t(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) break;
  }
  return int64_t(v >> 1) ^ -int64_t(v & 1);
}

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= uint8_t(bytes[i + 2]);
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? alphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? alphabet[n & 63] : '=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* p = std::strchr(alphabet, c);
    if (!p || !c) return std::nullopt;
    acc = (acc << 6) | uint32_t(p - alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string hdr_encode(const histogram& h) {
  std::string payload;
  if (h.count()) {  // every bucket up to the one holding the max, empty runs folded
    const int limit = histogram::index_of(h.max()) + 1;
    int next = 0;
    h.visit([&](int i, uint64_t c) {
      if (i >= limit) return false;
      if (i - next == 1) put_varint(payload, 0);
      else if (i - next > 1) put_varint(payload, -int64_t(i - next));
      put_varint(payload, int64_t(c));
      next = i + 1;
      return true;
    });
  }
  std::string plain;
  put32(plain, v2_cookie);
  put32(plain, uint32_t(payload.size()));
  put32(plain, 0);  // normalizing index offset
  put32(plain, significant_digits);
  put64(plain, 1);  // lowest discernible value
  put64(plain, uint64_t(histogram::highest_ns));
  double ratio = 1.0;  // integer to double value conversion ratio
  uint64_t bits;
  std::memcpy(&bits, &ratio, sizeof bits);
  put64(plain, bits);
  plain += payload;
  uLongf size = compressBound(uLong(plain.size()));
  std::string deflated(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &size, reinterpret_cast<const Bytef*>(plain.data()),
                uLong(plain.size()), Z_DEFAULT_COMPRESSION) != Z_OK)
    return "";
  deflated.resize(size);
  std::string out;
  put32(out, v2_compressed_cookie);
  put32(out, uint32_t(deflated.size()));
  return base64_encode(out + deflated);
}

std::string hdr_log_header(double start_epoch_s, const std::string& comment) {
  const std::string date = format_utc(std::time_t(start_epoch_s), "%a %b %d %H:%M:%S UTC %Y");
  return fmt::format("#{}\n#[Histogram log format version 1.3]\n#[StartTime: {:.3f} (seconds since epoch), {}]\n"
                     "#[BaseTime: {:.3f} (seconds since epoch)]\n"
                     "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
                     comment, start_epoch_s, date, start_epoch_s);
}

std::string hdr_log_line(double start_s, double length_s, double max_us, const std::string& encoded) {
  return fmt::format("{:.3f},{:.3f},{:.3f},{}\n", start_s, length_s, max_us / 1e3, encoded);
}

std::optional<histogram> hdr_decode(std::string_view text, std::string* why) {
  auto fail = [&](const char* w) {
    if (why) *why = w;
    return std::optional<histogram>{};
  };
  const auto bytes = base64_decode(text);
  if (!bytes || bytes->size() < 8) return fail("not base64 of an HdrHistogram encoding");
  if ((get(*bytes, 0, 4) & ~0xf0u) != 0x1c849304) return fail("not a compressed V2 HdrHistogram (cookie)");
  const uint64_t length = get(*bytes, 4, 4);
  if (length != bytes->size() - 8) return fail("compressed length does not match");
  // The largest encoding rig's layout has: the header and a 9-byte count for every bucket.
  std::string plain(40 + 9 * size_t(histogram::counts_length()), '\0');
  uLongf size = uLongf(plain.size());
  const int rc = uncompress(reinterpret_cast<Bytef*>(plain.data()), &size,
                            reinterpret_cast<const Bytef*>(bytes->data() + 8), uLong(length));
  if (rc == Z_BUF_ERROR) return fail("larger than rig's layout holds");
  if (rc != Z_OK) return fail("does not inflate");
  plain.resize(size);
  if (plain.size() < 40 || (get(plain, 0, 4) & ~0xf0u) != 0x1c849303) return fail("not a V2 encoding (cookie)");
  const uint64_t payload = get(plain, 4, 4);
  if (payload != plain.size() - 40) return fail("payload length does not match");
  if (get(plain, 8, 4) != 0) return fail("a normalizing index offset rig does not use");
  if (get(plain, 12, 4) != significant_digits || get(plain, 16, 8) != 1)
    return fail("a layout other than rig's (3 significant digits, lowest discernible value 1)");
  std::vector<std::pair<uint32_t, uint64_t>> buckets;
  size_t at = 40;
  int64_t index = 0;
  while (at < plain.size()) {
    const auto v = get_varint(plain, at);
    if (!v) return fail("a truncated count");
    if (*v < 0) {
      if (*v < -int64_t(histogram::counts_length())) return fail("more buckets than the range holds");
      index -= *v;
    } else {
      if (*v > 0) buckets.emplace_back(uint32_t(index), uint64_t(*v));
      ++index;
    }
    if (index > histogram::counts_length()) return fail("more buckets than the range holds");
  }
  try {
    return histogram::from_buckets(buckets);
  } catch (const std::exception&) {
    return fail("bucket out of range");
  }
}

}  // namespace rig
