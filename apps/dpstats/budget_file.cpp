#include "budget_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/privacy/budget_json.hpp"

namespace dpstats::cli {
namespace {

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buf[1 << 14];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    require(got >= 0, fmt::format("cannot read budget file {}: {}", path, std::strerror(errno)));
    if (got == 0) break;
    text.append(buf, static_cast<std::size_t>(got));
  }
  return text;
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) throw std::runtime_error(fmt::format("cannot write budget file {}: {}", path, std::strerror(errno)));
    done += static_cast<std::size_t>(put);
  }
  if (::ftruncate(fd, static_cast<off_t>(text.size())) != 0 || ::fsync(fd) != 0)
    throw std::runtime_error(fmt::format("cannot write budget file {}: {}", path, std::strerror(errno)));
}

}  // namespace

BudgetFile::BudgetFile(const std::optional<std::string>& path) {
  if (!path) return;
  path_ = *path;
  fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  require(fd_ >= 0, fmt::format("cannot open budget file {}: {} (create it with `dpstats budget "
                                "init`)", path_, std::strerror(errno)));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("cannot lock budget file {}", path_));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_all(fd_, path_));
  } catch (const nlohmann::json::parse_error&) {
    throw InvalidArgument(fmt::format("budget file {} is not JSON", path_));
  }
  budget_ = budget_from_json(j);
}

BudgetFile::~BudgetFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void BudgetFile::commit() {
  if (fd_ < 0) return;
  write_all(fd_, budget_to_json(*budget_).dump(2) + "\n", path_);
}

void create_budget_file(const std::string& path, const Budget& budget) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  require(fd >= 0, fmt::format("cannot create budget file {}: {}", path, std::strerror(errno)));
  write_all(fd, budget_to_json(budget).dump(2) + "\n", path);
  ::close(fd);
}

}  // namespace dpstats::cli
