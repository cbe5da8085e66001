#include "scheduling/policy.h"

#include <algorithm>

#include "scheduling/policies/policies.h"

namespace fracpack::scheduling {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> kNames = {"random",  "dotprod", "gpuclustering", "gpupacking", "bestfit",
                                                  "fgd",     "binpack", "spread",        "fracpack"};
  return kNames;
}

Result<std::unique_ptr<Policy>> make_policy(std::string_view name, const PolicyOptions& options) {
  std::unique_ptr<Policy> p;
  if (name == "random") p = policies::make_random(options.seed);
  if (name == "dotprod") p = policies::make_dotprod();
  if (name == "gpuclustering") p = policies::make_gpuclustering();
  if (name == "gpupacking") p = policies::make_gpupacking();
  if (name == "bestfit") p = policies::make_bestfit();
  if (name == "binpack") p = policies::make_binpack();
  if (name == "spread") p = policies::make_spread();
  if (name == "fgd") {
    if (!options.workload || options.workload->empty()) return Error{"policy fgd needs a target workload"};
    p = policies::make_fgd(std::make_shared<Workload>(Workload::typical(*options.workload)));
  }
  if (name == "fracpack") p = policies::make_fracpack(options);
  if (!p) {
    std::string known;
    for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
    return Error{"unknown policy \"" + std::string(name) + "\" (known: " + known + ")"};
  }
  return p;
}

int64_t extender_score(int64_t score, int64_t min_score, int64_t max_score) {
  if (score >= max_score) return 10;
  if (max_score <= min_score || score <= min_score) return 0;
  const long double x = static_cast<long double>(score - min_score) / static_cast<long double>(max_score - min_score);
  const auto s = static_cast<int64_t>(x * 9.0L);  // < 9 unless score == max
  return s < 0 ? 0 : (s > 9 ? 9 : s);
}

std::vector<int64_t> extender_scores(std::span<const std::optional<int64_t>> raw, std::span<const std::string_view> names) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& r : raw) {
    if (r) {
      lo = std::min(lo, *r);
      hi = std::max(hi, *r);
    }
  }
  std::optional<size_t> first_best;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] && *raw[i] == hi && (!first_best || names[i] < names[*first_best])) first_best = i;
  }
  std::vector<int64_t> out(raw.size(), 0);
  for (size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i]) continue;
    out[i] = extender_score(*raw[i], lo, hi);
    if (out[i] == 10 && i != *first_best) out[i] = 9;
  }
  return out;
}


}  // namespace fracpack::scheduling
