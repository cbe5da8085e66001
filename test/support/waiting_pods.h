// Pods waiting on a node as the node agent's matcher sees them
// (node/allocation_matcher.h), built for the node tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "node/allocation_matcher.h"

namespace fracpack::test {

// Pod "default/<name>" (uid "uid-<name>") created at `created`, whose
// containers ask devices in this order and whose record gives each the
// cards beside it.
node::WaitingPod waiting_pod(const std::string& name, const std::string& created,
                             std::vector<std::pair<node::GpuContainer, std::vector<scheduling::CardShare>>> containers);

}  // namespace fracpack::test
