// IDX reader for Fashion-MNIST; see include/dpstats/data/fashion_mnist.hpp.
#include "dpstats/data/fashion_mnist.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  require(std::filesystem::exists(path),
          "Fashion-MNIST file " + path +
              " not found (install the Debian package dataset-fashion-mnist: "
              "scripts/install-deps.sh)");
  std::vector<unsigned char> bytes;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    require(path.find('\'') == std::string::npos, "IDX path must not contain a quote: " + path);
    FILE* f = popen(("gzip -dc '" + path + "'").c_str(), "r");
    require(f != nullptr, "could not run gzip on " + path);
    unsigned char buf[1 << 16];
    std::size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + got);
    require(pclose(f) == 0, "gzip failed on " + path);
  } else {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return bytes;
}

std::uint32_t be32(const std::vector<unsigned char>& b, std::size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) |
         (std::uint32_t(b[at + 2]) << 8) | std::uint32_t(b[at + 3]);
}

}  // namespace

RowMatrix read_idx_images(const std::string& path) {
  const auto b = read_bytes(path);
  require(b.size() >= 16 && be32(b, 0) == 0x00000803, path + " is not an IDX3 image file");
  const std::size_t n = be32(b, 4), d = std::size_t(be32(b, 8)) * be32(b, 12);
  require(b.size() >= 16 + n * d, path + " is truncated");
  RowMatrix X(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  double* out = X.data();
  for (std::size_t i = 0; i < n * d; ++i) out[i] = b[16 + i] / 255.0;
  return X;
}

std::vector<int> read_idx_labels(const std::string& path) {
  const auto b = read_bytes(path);
  require(b.size() >= 8 && be32(b, 0) == 0x00000801, path + " is not an IDX1 label file");
  const std::size_t n = be32(b, 4);
  require(b.size() >= 8 + n, path + " is truncated");
  return std::vector<int>(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n));
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  FashionMnist f;
  f.train.images = read_idx_images(dir + "/train-images-idx3-ubyte.gz");
  f.train.labels = read_idx_labels(dir + "/train-labels-idx1-ubyte.gz");
  f.test.images = read_idx_images(dir + "/t10k-images-idx3-ubyte.gz");
  f.test.labels = read_idx_labels(dir + "/t10k-labels-idx1-ubyte.gz");
  require(f.train.images.rows() == static_cast<Eigen::Index>(f.train.labels.size()) &&
              f.test.images.rows() == static_cast<Eigen::Index>(f.test.labels.size()),
          "Fashion-MNIST: image and label counts differ in " + dir);
  return f;
}

bool fashion_mnist_available(const std::string& dir) {
  return std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") &&
         std::filesystem::exists(dir + "/t10k-labels-idx1-ubyte.gz");
}

}  // namespace dpstats
