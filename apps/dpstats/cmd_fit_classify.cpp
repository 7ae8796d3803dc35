// dpstats fit --task classify --data fashion-mnist|FILE.csv --model logistic|mlp
//             --optimizer adam|dp-sgd|dp-adam|dp-adam-debiased|dp-adam-jme|dp-adam-joint-clip
//             --epsilon E --delta D [--epochs N] [--batch-size m] [--step-size lr] [--clip ζ]
//             [--noise-multiplier z] [--hidden H] [--lambda λ] [--tau τ] [--classes K]
//             [--second-moment-floor γ] [--n-public N] [--feature-scale s] [--one-unit]
//             [--test FILE.csv] [--holdout F] [--threads T] [--save-weights FILE.npy] [--seed S]
// CSV layout: label (integer 0..K-1) in the first column, features after; --classes K is
// required for CSV (the number of classes is public), and so is --n-public N for a private
// optimizer (the public row count the sampling rate follows from: under add/remove the exact
// count is private). fashion-mnist reads the Debian package (60000 train rows, a public size, the
// 10000 test rows as the public evaluation set).
#include <unistd.h>

#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dry_run_cli.hpp"
#include "dpstats/data/fashion_mnist.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/training/classify_request.hpp"
#include "fit.hpp"
#include "ranks.hpp"
#include "dpstats/comm/communicator.hpp"

namespace dpstats::cli {

namespace {

// The task's options (ClassifyRequest, bound from its declared field list) and its files.
struct ClassifyArgs {
  optimize::ClassifyRequest request;
  std::string data, test, save;
};

constexpr std::int64_t kFashionMnistRows = 60000;  // the package's training split (public)

LabelledImages labelled(const Table& t, const std::string& path, int classes) {
  require(t.values.cols() >= 2, path + ": need a label column and at least one feature column");
  LabelledImages out;
  out.images = t.values.rightCols(t.values.cols() - 1);
  out.labels.resize(static_cast<std::size_t>(t.values.rows()));
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    const double v = t.values(i, 0);  // a label is data: neither it nor its row is shown
    require(v == std::floor(v) && v >= 0 && v < classes,
            path + ": a label is not an integer in 0.." + std::to_string(classes - 1) +
                " (--classes " + std::to_string(classes) + "; the row and value are not shown)");
    out.labels[static_cast<std::size_t>(i)] = static_cast<int>(v);
  }
  return out;
}

// Whether two paths name the same file (device and inode: public metadata, not the contents).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa{}, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

LabelledImages read_labelled_csv(const std::string& path, int classes, const ReadOptions& options) {
  return labelled(read_table(path, options), path, classes);
}

// This rank's rows (docs/guide.md "Running on a cluster"): a CSV (or --shards) as every command
// reads it; fashion-mnist's 60000 training rows cut evenly by rank (the public test split whole).
LabelledImages train_shard(const FitArgs& a, const std::string& data, int classes,
                           LabelledImages& fashion) {
  Communicator& comm = comm_or_single(ranks());
  LabelledImages out;
  if (data == "fashion-mnist") {
    const auto n = fashion.images.rows(), P = static_cast<Eigen::Index>(comm.size()),
               r = static_cast<Eigen::Index>(comm.rank());
    const Eigen::Index lo = n * r / P, hi = n * (r + 1) / P;
    out.images = fashion.images.middleRows(lo, hi - lo);
    out.labels.assign(fashion.labels.begin() + lo, fashion.labels.begin() + hi);
    return out;
  }
  InputArgs in = a.input;
  in.path = data;
  const InputShard shard = read_input_shard(in, ranks());
  all_or_none(comm, [&] { out = labelled(shard.table, data, classes); });
  return out;
}

void run_fit(const FitArgs& a, const ClassifyArgs& c) {
  for (auto [set, flag] : {std::pair{a.loss.has_value(), "loss"}, {a.method.has_value(), "method"},
                           {a.profile.has_value(), "profile"},
                           {a.domain_radius.has_value(), "domain-radius"},
                           {a.steps.has_value(), "steps"},
                           {a.feature_bound.has_value(), "feature-bound"},
                           {a.label_bound.has_value(), "label-bound"},
                           {a.centre, "centre"}, {a.no_centre, "no-centre"}})
    reject_for_task(set, flag, a.task);
  require(a.input.path.empty() || c.data.empty(), "give the data either as --data or as INPUT, not both");
  const std::string data = c.data.empty() ? a.input.path : c.data;
  require(!data.empty(), "--data fashion-mnist|FILE.csv is required for --task classify");
  const optimize::ClassifyRequest& q = c.request;
  optimize::ClassifyOptions o;
  optimize::apply_request(q, o);
  if (!optimize::is_private(o.optimizer)) {  // its own options: apply_request (the registry)
    require(!a.epsilon && !a.delta && !a.scale_share && !a.budget,
            "--optimizer adam is not private: --epsilon, --delta, --scale-share and --budget do "
            "not apply");
  } else {
    require(a.epsilon.has_value(),
            "--epsilon is required for a private optimizer (the whole run's target; with "
            "--noise-multiplier it is the cap the run must fit in)");
    require(a.delta.has_value(), "--delta is required for a private optimizer (in (0, 1))");
    o.privacy = {*a.epsilon, *a.delta};
    if (a.scale_share) o.scale_share = *a.scale_share;
  }
  if (a.epochs) o.epochs = *a.epochs;
  if (a.batch_size) o.batch_size = *a.batch_size;
  if (a.step_size) o.learning_rate = *a.step_size;
  if (a.clip) o.clip = *a.clip;
  if (a.threads) o.run.threads = *a.threads;
  if (!o.n_public && data == "fashion-mnist") o.n_public = kFashionMnistRows;
  o.holdout = a.holdout;
  if (a.holdout_share) o.holdout_share = *a.holdout_share;
  if (a.holdout_loss_bound) o.loss_bound = *a.holdout_loss_bound;

  o.run.comm = ranks();  // null: one process; several ranks: this rank's rows
  LabelledImages train, test, fashion;
  if (data == "fashion-mnist") {
    require(!q.classes || *q.classes == 10, "fashion-mnist has 10 classes");
    require(c.test.empty(), "--test does not apply to --data fashion-mnist (its test split is used)");
    auto f = load_fashion_mnist();
    fashion = std::move(f.train);
    test = std::move(f.test);
  } else {
    require(q.classes.has_value(), "--classes K (the public number of classes) is required for CSV data");
    if (!c.test.empty() && !dry_run_open()) test = read_labelled_csv(c.test, *q.classes, read_options(a.input));
  }
  const int classes = q.classes.value_or(10);
  train = train_shard(a, data, classes, fashion);
  fashion = LabelledImages{};
  const Eigen::Index d = train.images.cols();
  if (test.images.size() > 0)
    require(test.images.cols() == d, "--test has a different number of features than --data");
  auto rng = make_rng(a.seed);
  optimize::Classifier model = optimize::initial_model(q, d, classes, a.seed);
  const bool tty = isatty(fileno(stderr));
  const int epochs = o.epochs;
  auto progress = [tty, epochs](const optimize::EpochReport& r) {
    if (!tty) return;
    std::fprintf(stderr, "epoch %d/%d: train loss %.4f", r.epoch, epochs, r.train_loss);
    if (r.test_accuracy) std::fprintf(stderr, ", test accuracy %.4f", *r.test_accuracy);
    std::fprintf(stderr, " (%.1f s)\n", r.seconds);
  };
  optimize::EvalSet eval;
  if (test.images.size() > 0)
    eval = {&test.images, &test.labels, data != "fashion-mnist" && same_file(c.test, data)};
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const auto r = optimize::train_classifier(std::move(model), train.images, train.labels, o, *rng,
                                            budget.get(), eval, progress);
  budget.commit();  // before anything is written or printed
  if (!c.save.empty() && is_root()) {
    const Vector& p = r.estimate.parameters();
    write_npy(c.save, Eigen::Map<const RowMatrix>(p.data(), 1, p.size()));
  }
  nlohmann::ordered_json head = {{"command", "fit"}, {"task", name_of(a.task)},
                                 {"method", optimize::to_string(o.optimizer)}};
  nlohmann::ordered_json m = {{"kind", optimize::to_string(r.estimate.kind())},
                              {"features", r.estimate.features()},
                              {"classes", r.estimate.classes()},
                              {"parameters", r.estimate.num_parameters()}};
  if (r.estimate.kind() == optimize::ModelKind::mlp) m["hidden"] = r.estimate.hidden();
  if (!c.save.empty()) m["weights_file"] = c.save;
  head["model"] = m;
  const std::int64_t n = allreduce_count(comm_or_single(o.run.comm), train.images.rows());
  nlohmann::ordered_json extra = {{"n", n}, {"d", d}, {"data", data}};
  if (is_root())
    print_json(release_output(std::move(head), release_fields_json(r), extra, &a.input));
}

}  // namespace

FitRunner add_fit_classify(CLI::App* cmd) {
  auto c = std::make_shared<ClassifyArgs>();
  add_declared(cmd, "fit", "data", c->data);
  add_declared(cmd, "fit", "test", c->test);
  add_declared(cmd, "fit", "save_weights", c->save);
  add_request_options(cmd, "fit", c->request, optimize::classify_optimizers());
  std::string optimizers;  // --optimizer's help lists each optimizer's summary
  for (const auto& m : optimize::classify_optimizers())
    optimizers += fmt::format("{}{}: {}", optimizers.empty() ? "" : "; ", m.name, m.summary);
  auto* optimizer = cmd->get_option("--optimizer");
  optimizer->description(optimizer->get_description() + ": " + optimizers);
  auto given = [c] {
    std::vector<std::string> names = given_options(c->request);
    for (const auto& [name, path] : {std::pair{"data", &c->data}, std::pair{"test", &c->test},
                                     std::pair{"save_weights", &c->save}})
      if (!path->empty()) names.emplace_back(name);
    return names;
  };
  return {[c](const FitArgs& a) { run_fit(a, *c); }, given};
}

}  // namespace dpstats::cli
