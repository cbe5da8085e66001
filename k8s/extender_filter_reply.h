// ExtenderFilterResult (k8s.io/kube-scheduler/extender/v1), the filter
// reply, written as Go would encode it (PascalCase keys, every field
// present, null for nil) and as verdicts come: no maps, no copies of
// reasons.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fracpack::k8s {

// Reasons and errors in replies are cut to this many bytes (with "..."):
// they may quote what the pod asked for, and a reply must not grow with it.
inline constexpr size_t kMaxReasonBytes = 512;

// `text` with every '%' written as " percent": kube-scheduler records an
// extender's reasons as a printf format (its Events would read
// "65%!c(MISSING)ompute").
std::string printf_safe(std::string_view text);

// Passing nodes are answered the way they came: pass() each one's name, or
// its unmodified object text with `full_nodes`; fail() each rejected one
// (FailedNodes, or FailedAndUnresolvableNodes); then finish(). The caller
// answers each distinct node once (FailedNodes is a map).
class FilterReplyWriter {
 public:
  // `max_bytes`: the reply's budget; past it, what was written is dropped
  // and over_budget() tells the caller to refuse the request instead.
  FilterReplyWriter(bool full_nodes, size_t expected, size_t max_bytes = SIZE_MAX);
  // Room for this many bytes of passing entries (a full NodeList's objects:
  // the reply is then written without growing).
  void reserve(size_t bytes);
  void pass(std::string_view name_or_object);
  void fail(std::string_view node, std::string_view reason, bool unresolvable);
  // The same, pre-rendered (a cache of answers keeps them): a passing
  // node's entry as pass() writes it, a failing one's as fail() does.
  static void render_pass(std::string& out, std::string_view name_or_object, bool full_nodes);
  static void render_fail(std::string& out, std::string_view node, std::string_view reason);
  void pass_rendered(std::string_view entry);
  void fail_rendered(std::string_view entry, bool unresolvable);
  bool over_budget() const { return over_; }
  // Also list each unresolvable node in FailedNodes: kube-scheduler before
  // 1.21 knows no FailedAndUnresolvableNodes and drops those nodes without
  // their reason ("0/50 nodes are available: ."); later ones let that map
  // win (../shared/reference/kubernetes-protocol.md §2.4).
  void list_unresolvable_as_failed(bool on) { unresolvable_as_failed_ = on; }
  // `no_nodes`: neither NodeNames nor Nodes (the request had neither).
  // Once: the writer is spent after it.
  std::string finish(std::string_view error = "", bool no_nodes = false);

 private:
  // The part an entry goes to, after its separator; null once over budget.
  std::string* next_passed();
  std::string* next_failed(bool unresolvable);
  void charge();
  void also_failed(std::string_view entry);
  bool full_nodes_;
  bool unresolvable_as_failed_ = false;
  bool over_ = false;
  size_t max_bytes_;
  size_t passes_ = 0;
  std::string passed_;  // the reply's start, up to the passing entries
  std::string failed_, unresolvable_;
};

}  // namespace fracpack::k8s
