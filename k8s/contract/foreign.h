// The other profiles, as the one this deployment serves sees them. Two node
// agents never hand out the same cards unknowingly: a node registered by
// another profile's agent takes no placement from this deployment (its
// NodeSpec::excluded says why, in the filter reason and the log), and a pod
// naming two profiles' resources is refused instead of half-served.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "scheduling/model.h"
#include "common/result.h"

namespace fracpack::k8s {

struct ForeignProfile {
  std::string name;                           // "hami"
  std::vector<std::string> node_annotations;  // any of them on a node: its agent registered the node
  std::vector<std::string> node_resources;    // any of them non-zero in a node's capacity or allocatable: the same
  std::vector<std::string> pod_resources;     // what its pods ask with
};

class ForeignProfiles {
 public:
  ForeignProfiles() = default;
  ForeignProfiles(std::string serving, std::vector<ForeignProfile> others);

  // Keeps what the checks below read.
  void extend(Selection& selection) const;
  // Why `node` is another profile's ("" when it is not).
  std::string node_owner(const Node& node) const;
  // What every contract's node_spec starts from: the node's name and
  // allocatable CPU and memory, with `excluded` set when another profile's
  // agent registers its cards (GFD labels are on every NVIDIA node and prove
  // nothing; two agents would hand out the same cards).
  Result<scheduling::NodeSpec> node_basics(const Node& node) const;
  // Refuses a pod that names another profile's resources beside ours.
  Status check_pod(const Pod& pod, const std::vector<std::string>& own_resources) const;

  const std::vector<ForeignProfile>& profiles() const { return others_; }

 private:
  std::string serving_;
  std::vector<ForeignProfile> others_;
};

}  // namespace fracpack::k8s
