// Keyed Poisson subsampling by AES-128 (OpenSSL EVP, AES-NI where the CPU has it); see
// keyed_sample.hpp.
#include "keyed_sample.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>

#include "dpstats/error.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

struct KeyedPoissonSample::Cipher {
  EVP_CIPHER_CTX* ctx = nullptr;
  ~Cipher() { EVP_CIPHER_CTX_free(ctx); }
};

KeyedPoissonSample::KeyedPoissonSample(std::uint64_t key0, std::uint64_t key1,
                                       std::int64_t expected, std::int64_t total)
    : cipher_(std::make_unique<Cipher>()) {
  require(total >= 1 && expected >= 1 && expected <= total,
          fmt::format("Poisson sample: need 1 <= m <= N, got m = {}, N = {}", expected, total));
  all_ = expected == total;
  threshold_ = all_ ? 0
                    : static_cast<std::uint64_t>((static_cast<u128>(expected) << 64) /
                                                 static_cast<u128>(total));
  unsigned char key[16];
  std::memcpy(key, &key0, 8);
  std::memcpy(key + 8, &key1, 8);
  cipher_->ctx = EVP_CIPHER_CTX_new();
  require(cipher_->ctx != nullptr &&
              EVP_EncryptInit_ex(cipher_->ctx, EVP_aes_128_ecb(), nullptr, key, nullptr) == 1 &&
              EVP_CIPHER_CTX_set_padding(cipher_->ctx, 0) == 1,
          "Poisson sample: the AES-128 cipher could not be set up (OpenSSL)");
  std::memset(key, 0, sizeof key);
}

KeyedPoissonSample::~KeyedPoissonSample() = default;

void KeyedPoissonSample::sample(std::uint64_t step, std::int64_t offset, std::int64_t local,
                                std::vector<Eigen::Index>& rows) {
  rows.clear();
  if (all_) {
    for (std::int64_t i = 0; i < local; ++i) rows.push_back(i);
    return;
  }
  constexpr std::int64_t kChunk = 4096;  // blocks per call (64 KiB)
  buf_.resize(2 * kChunk);
  for (std::int64_t b = 0; b < local; b += kChunk) {
    const std::int64_t n = std::min(kChunk, local - b);
    for (std::int64_t i = 0; i < n; ++i) {
      buf_[static_cast<std::size_t>(2 * i)] = step;
      buf_[static_cast<std::size_t>(2 * i + 1)] = static_cast<std::uint64_t>(offset + b + i);
    }
    auto* p = reinterpret_cast<unsigned char*>(buf_.data());
    int written = 0;
    require(EVP_EncryptUpdate(cipher_->ctx, p, &written, p, static_cast<int>(16 * n)) == 1 &&
                written == 16 * n,
            "Poisson sample: AES-128 failed (OpenSSL)");
    for (std::int64_t i = 0; i < n; ++i)
      if (buf_[static_cast<std::size_t>(2 * i)] < threshold_) rows.push_back(b + i);
  }
}

}  // namespace dpstats::optimize
