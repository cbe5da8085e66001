// ExtenderFilterResult as kube-scheduler's Go code reads it
// (../shared/reference/kubernetes-protocol.md §1): every field written,
// reasons cut and printf-safe, the reply's budget kept.
#include "k8s/extender_filter_reply.h"

#include <gtest/gtest.h>

// (A tree: the tests read the reply back whole.)
#include <nlohmann/json.hpp>

namespace fracpack::k8s::extender_filter_reply_test {
namespace {

TEST(FilterReply, EveryFieldWrittenNamesOrObjects) {
  FilterReplyWriter names(false, 2);
  names.pass("n1");
  names.fail("n2", "insufficient GPU", false);
  names.fail("n3", "no GPU of model X", true);
  EXPECT_EQ(names.finish(), R"({"Nodes":null,"NodeNames":["n1"],"FailedNodes":{"n2":"insufficient GPU"},)"
                            R"("FailedAndUnresolvableNodes":{"n3":"no GPU of model X"},"Error":""})");
  FilterReplyWriter objects(true, 1);
  objects.pass(R"({"metadata":{"name":"n1"}})");
  EXPECT_EQ(objects.finish(), R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1"}}]},"NodeNames":null,)"
                              R"("FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
  FilterReplyWriter none(false, 0);
  EXPECT_EQ(none.finish("pod ml/p: bad", true),
            R"({"Nodes":null,"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":"pod ml/p: bad"})");
}

TEST(FilterReply, ReasonsAreCutAndTheBudgetIsKept) {
  FilterReplyWriter w(false, 1);
  w.fail("n1", "no GPU of model " + std::string(100000, 'M') + "\xc3\xa9", true);
  const std::string out = w.finish("error " + std::string(100000, 'E'));
  EXPECT_LT(out.size(), 2 * kMaxReasonBytes + 200) << "a reason and an error of at most kMaxReasonBytes each";
  EXPECT_NE(out.find("MMM...\""), std::string::npos);
  EXPECT_NE(out.find("EEE...\""), std::string::npos);
  // A cut never splits a UTF-8 sequence.
  FilterReplyWriter u(false, 1);
  u.fail("n1", std::string(kMaxReasonBytes - 1, 'x') + "\xc3\xa9", false);
  EXPECT_EQ(u.finish().find("\\ufffd"), std::string::npos);
  FilterReplyWriter small(false, 100, 1000);
  for (int i = 0; i < 100 && !small.over_budget(); ++i) small.fail("node-" + std::to_string(i), "insufficient GPU", false);
  EXPECT_TRUE(small.over_budget());
  FilterReplyWriter enough(false, 3, 1000);
  for (int i = 0; i < 3; ++i) enough.pass("node-" + std::to_string(i));
  EXPECT_FALSE(enough.over_budget());
}

// Found on a real kube-scheduler (issue 31): it records the reasons as a
// printf format ("65%!c(MISSING)ompute" in Events); and before 1.21 it
// drops nodes listed only in FailedAndUnresolvableNodes with their reasons
// ("0/50 nodes are available: .").
TEST(FilterReply, ReasonsCarryNoPercentSignAndSurviveOldSchedulers) {
  FilterReplyWriter w(false, 2);
  w.fail("n1", "needs 1 GPU with 65% compute", false);
  w.fail("n2", "no card of model A100 (0% of 4 cards match)", true);
  std::string out = w.finish("an error of 100%");
  EXPECT_EQ(out.find('%'), std::string::npos) << out;
  EXPECT_NE(out.find("needs 1 GPU with 65 percent compute"), std::string::npos) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_FALSE(j["FailedNodes"].contains("n2")) << "by default each node once";
  FilterReplyWriter old(false, 2);
  old.list_unresolvable_as_failed(true);
  old.fail("n1", "busy", false);
  old.fail("n2", "never: no such model", true);
  old.fail_rendered(R"("n3":"never either")", true);
  j = nlohmann::json::parse(old.finish());
  EXPECT_EQ(j["FailedNodes"]["n2"], "never: no such model");
  EXPECT_EQ(j["FailedNodes"]["n3"], "never either");
  EXPECT_EQ(j["FailedAndUnresolvableNodes"]["n2"], "never: no such model") << "newer schedulers: this map wins";
  EXPECT_EQ(j["FailedNodes"].size(), 3u);
}

}  // namespace
}  // namespace fracpack::k8s::extender_filter_reply_test
