#include "test/support/contract_pods.h"

#include <gtest/gtest.h>

namespace fracpack::testing {

k8s::Pod pod_from(const std::string& text, const k8s::Contract& contract) {
  auto p = k8s::parse_pod(text, contract.selection());
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.message());
  return p.ok() ? *p : k8s::Pod{};
}

std::string pod_json(const std::string& containers, const std::string& annotations, const std::string& spec_fields) {
  return R"({"metadata":{"name":"p","namespace":"ml","uid":"u1")" +
         (annotations.empty() ? std::string() : R"(,"annotations":{)" + annotations + "}") + R"(},"spec":{)" + spec_fields +
         R"("containers":[)" + containers + "]}}";
}

std::string container_json(const std::string& name, const std::string& limits) {
  return R"({"name":")" + name + R"(","resources":{"limits":{)" + limits + "}}}";
}

k8s::ContractConfig profile_config(const std::string& name) {
  k8s::ContractConfig c;
  c.profile = *k8s::parse_profile(name);
  return c;
}

}  // namespace fracpack::testing
