// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) from the Debian package dataset-fashion-mnist:
// IDX files (gzip-compressed, read through `gzip -dc`) under /usr/share/datasets/fashion-mnist.
// Images are returned as rows of 784 pixels scaled to [0, 1] (so ||x|| <= 28, a public bound),
// labels as integers 0..9.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct LabelledImages {
  RowMatrix images;           // n x 784, pixels / 255
  std::vector<int> labels;    // n labels in 0..9
};

struct FashionMnist {
  LabelledImages train;  // 60000
  LabelledImages test;   // 10000
};

// Reads an IDX3 image file (magic 0x803) or an IDX1 label file (magic 0x801); `.gz` files are
// decompressed with gzip. Throws InvalidArgument naming the file on a missing file, a wrong magic
// number or a truncated file.
RowMatrix read_idx_images(const std::string& path);
std::vector<int> read_idx_labels(const std::string& path);

// Both splits from `dir` (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz). The message of the InvalidArgument
// thrown when the package is missing says how to install it.
FashionMnist load_fashion_mnist(const std::string& dir = kFashionMnistDir);
bool fashion_mnist_available(const std::string& dir = kFashionMnistDir);

}  // namespace dpstats
