#include "server/reply_cache.h"

#include <algorithm>

#include "scheduling/decision_cache.h"
#include "scheduling/policy.h"

namespace fracpack::server {

using scheduling::NodeState;
using scheduling::Verdict;

FilterSection section_of(const Verdict& v) {
  if (v.fits) return FilterSection::kPassed;
  return v.unresolvable ? FilterSection::kUnresolvable : FilterSection::kFailed;
}

void FilterTally::add(FilterSection section, std::string_view rejection_class, double sign) {
  if (section == FilterSection::kPassed) {
    passed += sign;
    return;
  }
  (section == FilterSection::kUnresolvable ? unresolvable : failed) += sign;
  by_class[rejection_class] += sign;
}

void FilterTally::report(Metrics& m) const {
  m.filter_outcome(static_cast<size_t>(passed), static_cast<size_t>(failed), static_cast<size_t>(unresolvable));
  for (const auto& [c, n] : by_class) {
    if (n > 0) m.rejected(c, n);
  }
}

// --- KeptReply, KeptReplies ---

bool KeptReply::current(const scheduling::Ledger& l, uint64_t generation_now, size_t budget_now) const {
  return ledger == &l && layout == l.layout() && generation == generation_now && budget == budget_now;
}

void KeptReply::index(const scheduling::Ledger& l, uint64_t generation_now, size_t budget_now, std::span<const uint8_t> repeated,
                      std::span<const NodeState* const> resolved) {
  ledger = &l;
  layout = l.layout();
  generation = generation_now;
  budget = budget_now;
  names.clear();
  nodes.clear();
  for (size_t i = 0; i < list->names.size(); ++i) {
    if (!repeated.empty() && repeated[i]) continue;
    names.push_back(list->names[i]);
    nodes.push_back(resolved[i]);
  }
  by_slot.assign(l.slot_bound(), -1);
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k] != nullptr && nodes[k]->version() != 0) by_slot[nodes[k]->slot()] = static_cast<int32_t>(k);
  }
}

bool KeptReply::changed(const scheduling::Ledger& l, std::vector<uint32_t>& scratch, std::vector<uint32_t>& ks,
                        std::vector<const NodeState*>& redo) const {
  scratch.clear();
  ks.clear();
  redo.clear();
  if (!l.changed_since(stamp, scratch)) return false;
  for (uint32_t slot : scratch) {
    if (slot < by_slot.size() && by_slot[slot] >= 0) ks.push_back(static_cast<uint32_t>(by_slot[slot]));
  }
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  for (uint32_t k : ks) redo.push_back(nodes[k]);
  return true;
}

template <class Entry>
Entry& KeptReplies<Entry>::find(const std::shared_ptr<const k8s::KnownNodeNames>& list, const std::string& demand) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e->list == list && e->demand == demand; });
  if (it == entries_.end()) {
    auto e = std::make_unique<Entry>();
    e->list = list;
    e->demand = demand;
    entries_.insert(entries_.begin(), std::move(e));
  } else {
    std::rotate(entries_.begin(), it, it + 1);
  }
  return *entries_.front();
}

template <class Entry>
void KeptReplies<Entry>::trim() {
  size_t bytes = 0, keep = 0;
  while (keep < entries_.size() && keep < kEntries && (keep == 0 || bytes + entries_[keep]->bytes <= kMaxBytes)) {
    bytes += entries_[keep]->bytes;
    ++keep;
  }
  entries_.resize(keep);
}

// --- filter ---

KeptFilterAnswer FilterReplyCache::answer_of(std::string_view name, const Verdict& v) {
  KeptFilterAnswer a;
  a.section = section_of(v);
  if (v.fits) {
    k8s::FilterReplyWriter::render_pass(a.text, name, false);
    return a;
  }
  a.rejection_class = rejection_class(v.reason);
  k8s::FilterReplyWriter::render_fail(a.text, name, v.reason);
  return a;
}

void FilterReplyCache::render(KeptFilterReply& e) const {
  k8s::FilterReplyWriter reply(false, e.answers.size(), e.budget);
  reply.list_unresolvable_as_failed(unresolvable_as_failed_);
  size_t text_bytes = 0;
  for (const KeptFilterAnswer& a : e.answers) {
    text_bytes += a.text.size();
    if (a.section == FilterSection::kPassed) {
      reply.pass_rendered(a.text);
    } else {
      reply.fail_rendered(a.text, a.section == FilterSection::kUnresolvable);
    }
  }
  e.body = reply.over_budget() ? nullptr : std::make_shared<const std::string>(reply.finish());
  e.bytes = (e.body ? e.body->size() : 0) + text_bytes + e.answers.size() * (sizeof(KeptFilterAnswer) + 32) +
            e.by_slot.size() * sizeof(int32_t);
}

FilterReplyCache::Reply FilterReplyCache::answer(const std::shared_ptr<const k8s::KnownNodeNames>& list,
                                                 std::span<const uint8_t> repeated, std::span<const NodeState* const> nodes,
                                                 const scheduling::PodRequest& pod, const scheduling::Ledger& ledger,
                                                 scheduling::Evaluator& evaluator, uint64_t generation, size_t max_reply_bytes) {
  const std::string demand = scheduling::demand_key(pod);
  std::lock_guard lock(mu_);
  KeptFilterReply& e = entries_.find(list, demand);
  if (refreshable(e, ledger, generation, max_reply_bytes)) {
    bool any = false;
    evaluator.evaluate(pod, redo_, [&](size_t j, const Verdict& v) {
      const uint32_t k = ks_[j];
      KeptFilterAnswer a = answer_of(e.names[k], v);
      KeptFilterAnswer& old = e.answers[k];
      if (a.section == old.section && a.text == old.text) return;
      e.tally.add(old.section, old.rejection_class, -1);
      e.tally.add(a.section, a.rejection_class, 1);
      old = std::move(a);
      any = true;
    });
    if (any) render(e);
    ++(any ? stats_.refreshed : stats_.reused);
  } else {
    e.index(ledger, generation, max_reply_bytes, repeated, nodes);
    e.answers.assign(e.nodes.size(), KeptFilterAnswer{});
    e.tally = FilterTally{};
    evaluator.evaluate(pod, e.nodes, [&](size_t k, const Verdict& v) {
      e.answers[k] = answer_of(e.names[k], v);
      e.tally.add(v);
    });
    render(e);
    ++stats_.rebuilt;
  }
  e.stamp = ledger.change_stamp();
  Reply out{e.body, e.tally};
  if (!out.body) {
    entries_.drop_newest();  // an over-budget reply is not kept
  } else {
    entries_.trim();
  }
  return out;
}

// --- prioritize ---

void PrioritizeReplyCache::render(KeptPrioritizeReply& e) {
  std::string out = "[";
  out.reserve(e.names.size() * 40 + 2);
  e.score_at.resize(e.names.size());
  for (size_t k = 0; k < e.names.size(); ++k) {
    if (k) out.push_back(',');
    e.score_at[k] = k8s::append_host_priority(out, e.names[k], e.scores[k]);
  }
  out.push_back(']');
  e.body = std::make_shared<std::string>(std::move(out));
  e.bytes = 2 * e.body->size() + e.names.size() * (sizeof(std::optional<int64_t>) + 48);
}

std::shared_ptr<const std::string> PrioritizeReplyCache::answer(const std::shared_ptr<const k8s::KnownNodeNames>& list,
                                                                std::span<const uint8_t> repeated,
                                                                std::span<const NodeState* const> nodes,
                                                                const scheduling::PodRequest& pod, const scheduling::Ledger& ledger,
                                                                scheduling::Evaluator& evaluator, uint64_t generation) {
  const std::string demand = scheduling::demand_key(pod);
  std::lock_guard lock(mu_);
  KeptPrioritizeReply& e = entries_.find(list, demand);
  if (refreshable(e, ledger, generation, 0)) {
    bool any = false;
    evaluator.evaluate(pod, redo_, [&](size_t j, const Verdict& v) {
      std::optional<int64_t> r;
      if (v.fits) r = v.score;
      if (r == e.raw[ks_[j]]) return;
      e.raw[ks_[j]] = r;
      any = true;
    });
    if (any) {
      std::vector<int64_t> scores = scheduling::extender_scores(e.raw, e.names);
      // Written over in place unless a reply in flight still holds the body.
      if (e.body.use_count() > 1) e.body = std::make_shared<std::string>(*e.body);
      for (size_t k = 0; k < scores.size(); ++k) {
        if (scores[k] != e.scores[k]) k8s::write_score(e.body->data() + e.score_at[k], scores[k]);
      }
      e.scores = std::move(scores);
    }
    ++(any ? stats_.refreshed : stats_.reused);
  } else {
    e.index(ledger, generation, 0, repeated, nodes);
    e.raw.assign(e.nodes.size(), std::nullopt);
    evaluator.evaluate(pod, e.nodes, [&](size_t k, const Verdict& v) {
      if (v.fits) e.raw[k] = v.score;
    });
    e.scores = scheduling::extender_scores(e.raw, e.names);
    render(e);
    ++stats_.rebuilt;
  }
  e.stamp = ledger.change_stamp();
  std::shared_ptr<const std::string> out = e.body;
  entries_.trim();
  return out;
}
}  // namespace fracpack::server
