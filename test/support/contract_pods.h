// Pods as the contracts' tests write them: JSON text decoded as the informer
// decodes it, for one contract's selection, and the profiles by name.
#pragma once

#include <string>

#include "k8s/contract/contract.h"
#include "k8s/contract/profiles.h"
#include "k8s/objects.h"

namespace fracpack::testing {

// A pod decoded from JSON with what `contract` selects; a decoding error
// fails the calling test (and gives an empty pod).
k8s::Pod pod_from(const std::string& text, const k8s::Contract& contract);
// A pod "ml/p" (uid u1) with these containers (JSON objects, comma
// separated) and annotations (JSON members); `spec_fields` are further
// members of its spec, each followed by a comma (R"("nodeName":"n1",)").
std::string pod_json(const std::string& containers, const std::string& annotations = "",
                     const std::string& spec_fields = "");
// One container named `name` whose resources.limits are `limits`, e.g.
// R"("nvidia.com/gpu":"1")".
std::string container_json(const std::string& name, const std::string& limits);
// The configuration that selects the profile `name`, all else default.
k8s::ContractConfig profile_config(const std::string& name);

}  // namespace fracpack::testing
