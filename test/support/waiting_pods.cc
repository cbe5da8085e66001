#include "test/support/waiting_pods.h"

namespace fracpack::test {

node::WaitingPod waiting_pod(const std::string& name, const std::string& created,
                             std::vector<std::pair<node::GpuContainer, std::vector<scheduling::CardShare>>> containers) {
  node::WaitingPod p;
  p.uid = "uid-" + name;
  p.key = "default/" + name;
  p.creation_timestamp = created;
  std::vector<std::vector<scheduling::CardShare>> cards;
  scheduling::Allocation record;  // what the whole record holds (the agent's account)
  for (auto& [c, s] : containers) {
    p.containers.push_back(c);
    record.containers.push_back(scheduling::ContainerAllocation{c.name, c.init, s});
    cards.push_back(std::move(s));
  }
  p.cards = std::move(cards);
  p.holding = scheduling::charges_of(record);
  return p;
}

}  // namespace fracpack::test
