// What the three profiles' contracts (fracpack, hami, gpushare) have in
// common, once: their profile name, their names (resources and annotations,
// renamable in the configuration), their options, the other profiles they
// leave alone (foreign.h) and what the object decoders keep for them. Each
// contract adds how a pod asks, how a node registers its cards and the
// record a Binding writes and a restart reads back.
//
// `Names` provides gpu_resources() (the pod resources) and selection()
// (what the decoders keep of the profile's own names).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k8s/contract/contract.h"
#include "k8s/contract/foreign.h"
#include "k8s/contract/kubernetes_rules.h"
#include "k8s/contract/profile.h"
#include "k8s/record_signature.h"

namespace fracpack::k8s {

template <class Names, class Options>
class ProfileContract : public Contract {
 public:
  std::string_view name() const override { return profile_; }
  const Selection& selection() const override { return selection_; }
  std::vector<std::string> pod_resources() const override { return resources_; }
  bool requests_gpu(const Pod& pod) const override { return names_any_resource(pod, resources_); }

  const Names& names() const { return names_; }
  const Options& options() const { return options_; }

 protected:
  ProfileContract(std::string_view profile, Names names, Options options, ForeignProfiles foreign)
      : profile_(profile),
        names_(std::move(names)),
        options_(std::move(options)),
        foreign_(std::move(foreign)),
        selection_(names_.selection()),
        resources_(names_.gpu_resources()) {
    foreign_.extend(selection_);
    selection_.annotation_prefixes.emplace_back(kRecordSignatureAnnotation);
  }

  std::string_view profile_;
  Names names_;
  Options options_;
  ForeignProfiles foreign_;
  Selection selection_;
  // names_.gpu_resources(), built once: every filter, prioritize and bind asks.
  std::vector<std::string> resources_;
};

}  // namespace fracpack::k8s
