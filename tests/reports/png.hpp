#pragma once
// A small PNG reader for the report tests: 8-bit RGB or RGBA, not interlaced (what
// Chromium's screenshots are), through zlib.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rig::testing {

struct rgb_image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // 3 bytes a pixel, row after row
  const uint8_t* at(int x, int y) const { return &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3]; }
};

inline rgb_image read_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string f = ss.str();
  if (f.size() < 8 || f.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) throw std::runtime_error(path + ": not a PNG");
  auto be32 = [&](size_t at) {
    return uint32_t(uint8_t(f[at])) << 24 | uint32_t(uint8_t(f[at + 1])) << 16 | uint32_t(uint8_t(f[at + 2])) << 8 |
           uint32_t(uint8_t(f[at + 3]));
  };
  rgb_image img;
  int color_type = 0;
  std::string idat;
  for (size_t at = 8; at + 12 <= f.size();) {
    const uint32_t len = be32(at);
    const std::string type = f.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = int(be32(at + 8));
      img.height = int(be32(at + 12));
      if (f[at + 16] != 8 || f[at + 20] != 0) throw std::runtime_error(path + ": not 8-bit or interlaced");
      color_type = f[at + 17];
      if (color_type != 2 && color_type != 6) throw std::runtime_error(path + ": not RGB or RGBA");
    } else if (type == "IDAT") {
      idat += f.substr(at + 8, len);
    }
    at += 12 + len;
  }
  const size_t bpp = color_type == 6 ? 4 : 3, stride = size_t(img.width) * bpp;
  std::vector<uint8_t> raw((stride + 1) * size_t(img.height));
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size())
    throw std::runtime_error(path + ": bad image data");
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img.rgb.resize(size_t(img.width) * size_t(img.height) * 3);
  for (int y = 0; y < img.height; ++y) {
    const uint8_t* line = &raw[size_t(y) * (stride + 1)];
    const uint8_t filter = line[0];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? cur[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
      int p = line[1 + i];
      switch (filter) {
        case 1: p += a; break;
        case 2: p += b; break;
        case 3: p += (a + b) / 2; break;
        case 4: {
          const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
          p += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: break;
      }
      cur[i] = uint8_t(p);
    }
    for (int x = 0; x < img.width; ++x)
      for (int k = 0; k < 3; ++k) img.rgb[(size_t(y) * size_t(img.width) + size_t(x)) * 3 + size_t(k)] = cur[size_t(x) * bpp + size_t(k)];
    std::swap(prev, cur);
  }
  return img;
}

}  // namespace rig::testing
