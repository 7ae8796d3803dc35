// Keyed Poisson subsampling by AES-128 in counter mode (OpenSSL EVP, AES-NI where the CPU has it)
// and exact geometric gaps; see keyed_sample.hpp.
#include "keyed_sample.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstring>

#include "dpstats/error.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

// The keyed stream of one step: the words of AES-128_key(step, 0), AES-128_key(step, 1), ...
// (block (step, j) as two little-endian 64-bit words), encrypted kBlocks at a time.
class KeyedPoissonSample::Stream final : public Rng {
 public:
  Stream(std::uint64_t key0, std::uint64_t key1) {
    unsigned char key[16];
    std::memcpy(key, &key0, 8);
    std::memcpy(key + 8, &key1, 8);
    ctx_ = EVP_CIPHER_CTX_new();
    const bool ok = ctx_ != nullptr &&
                    EVP_EncryptInit_ex(ctx_, EVP_aes_128_ecb(), nullptr, key, nullptr) == 1 &&
                    EVP_CIPHER_CTX_set_padding(ctx_, 0) == 1;
    std::memset(key, 0, sizeof key);
    require(ok, "Poisson sample: the AES-128 cipher could not be set up (OpenSSL)");
  }
  ~Stream() override { EVP_CIPHER_CTX_free(ctx_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void start(std::uint64_t step) {
    step_ = step;
    counter_ = 0;
    next_ = words_.size();
  }
  std::uint64_t next_u64() override {
    if (next_ == words_.size()) refill();
    return words_[next_++];
  }
  bool seeded() const noexcept override { return false; }  // keyed by the release's generator

 private:
  static constexpr std::size_t kBlocks = 32;
  void refill() {
    for (std::size_t i = 0; i < kBlocks; ++i) {
      words_[2 * i] = step_;
      words_[2 * i + 1] = counter_++;
    }
    auto* p = reinterpret_cast<unsigned char*>(words_.data());
    int written = 0;
    require(EVP_EncryptUpdate(ctx_, p, &written, p, static_cast<int>(16 * kBlocks)) == 1 &&
                written == static_cast<int>(16 * kBlocks),
            "Poisson sample: AES-128 failed (OpenSSL)");
    next_ = 0;
  }
  EVP_CIPHER_CTX* ctx_ = nullptr;
  std::uint64_t step_ = 0, counter_ = 0;
  std::array<std::uint64_t, 2 * kBlocks> words_{};
  std::size_t next_ = 2 * kBlocks;
};

KeyedPoissonSample::KeyedPoissonSample(std::uint64_t key0, std::uint64_t key1, double rate)
    : stream_(std::make_unique<Stream>(key0, key1)), gaps_(rate) {}

KeyedPoissonSample::~KeyedPoissonSample() = default;

void KeyedPoissonSample::sample(std::uint64_t step, std::int64_t offset, std::int64_t local,
                                std::vector<Eigen::Index>& rows) {
  rows.clear();
  if (gaps_.rate() == 1) {
    for (std::int64_t i = 0; i < local; ++i) rows.push_back(i);
    return;
  }
  stream_->start(step);
  RandomBits bits(*stream_);
  const auto begin = static_cast<u128>(offset), end = static_cast<u128>(offset + local);
  for (u128 id = gaps_(bits); id < end; id += 1 + static_cast<u128>(gaps_(bits)))
    if (id >= begin) rows.push_back(static_cast<Eigen::Index>(id - begin));
}

}  // namespace dpstats::optimize
