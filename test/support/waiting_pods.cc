#include "test/support/waiting_pods.h"

namespace fracpack::test {

node::WaitingPod waiting_pod(const std::string& name, const std::string& created,
                             std::vector<std::pair<node::GpuContainer, std::vector<scheduling::CardShare>>> containers) {
  node::WaitingPod p;
  p.uid = "uid-" + name;
  p.key = "default/" + name;
  p.creation_timestamp = created;
  std::vector<std::vector<scheduling::CardShare>> cards;
  for (auto& [c, s] : containers) {
    p.containers.push_back(c);
    cards.push_back(std::move(s));
  }
  p.cards = std::move(cards);
  return p;
}

}  // namespace fracpack::test
