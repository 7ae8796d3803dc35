// Fashion-MNIST train images (Debian package dataset-fashion-mnist) as a 60000 x 784 matrix with
// pixels scaled to [0, 1], so every row has ||x|| <= 28 (public bound). Used by the
// geometric-median reproduction and benchmark only; tests never need it.
#pragma once
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats::repro {

inline const char* kFashionTrainImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

// The IDX file through `gzip -dc`; nullopt (and a message on stderr) when unavailable.
inline std::optional<RowMatrix> load_fashion_mnist(const std::string& path = kFashionTrainImages) {
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "fashion-mnist: %s not found (apt-get install dataset-fashion-mnist)\n",
                 path.c_str());
    return std::nullopt;
  }
  const std::string cmd = "gzip -dc '" + path + "'";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return std::nullopt;
  std::vector<unsigned char> bytes;
  unsigned char buf[1 << 16];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + got);
  pclose(f);
  auto be32 = [&](std::size_t at) {
    return (std::uint32_t(bytes[at]) << 24) | (std::uint32_t(bytes[at + 1]) << 16) |
           (std::uint32_t(bytes[at + 2]) << 8) | std::uint32_t(bytes[at + 3]);
  };
  if (bytes.size() < 16 || be32(0) != 0x00000803) {
    std::fprintf(stderr, "fashion-mnist: %s is not an IDX3 image file\n", path.c_str());
    return std::nullopt;
  }
  const std::size_t n = be32(4), rows = be32(8), cols = be32(12), d = rows * cols;
  if (bytes.size() < 16 + n * d) return std::nullopt;
  RowMatrix X(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) X(i, j) = bytes[16 + i * d + j] / 255.0;
  return X;
}

}  // namespace dpstats::repro
