// --budget FILE: one Budget across invocations of the tool (privacy/budget_json.hpp format).
// The file is locked (flock, exclusive) from before it is read until the updated budget has been
// written back and flushed, so concurrent invocations compose one after the other. A command
// prints its release only after commit(): a run that dies before then has released nothing.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "dpstats/privacy/budget.hpp"

namespace dpstats::cli {

class BudgetFile {
 public:
  // No path: get() is nullptr and commit() does nothing.
  explicit BudgetFile(const std::optional<std::string>& path);
  ~BudgetFile();
  BudgetFile(const BudgetFile&) = delete;
  BudgetFile& operator=(const BudgetFile&) = delete;

  Budget* get() { return budget_ ? &*budget_ : nullptr; }
  void commit();  // writes the budget back (in place, fsync) while still holding the lock

 private:
  std::string path_;
  int fd_ = -1;
  std::optional<Budget> budget_;
};

// Creates a budget file (refuses to overwrite one).
void create_budget_file(const std::string& path, const Budget& budget);

}  // namespace dpstats::cli
