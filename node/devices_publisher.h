// Publishes the node's cards to the extender: the fracpack.io/gpu-devices
// annotation (records.h: devices_annotation) on the agent's own Node,
// written with a JSON merge patch only when the value on the server
// differs (RBAC: get and patch nodes). The Node is read before every
// write, so an annotation removed or edited by hand is put back, and an
// unchanged one costs one GET.
#pragma once

#include <chrono>
#include <string>

#include "k8s/api_client.h"

namespace fracpack::node {

class DevicesPublisher {
 public:
  DevicesPublisher(k8s::ClientConfig client, std::string node, std::string annotation);

  // Makes the annotation `value`; returns whether it had to be written.
  // Errors name the node (a missing Node: is the node name right?).
  Result<bool> publish(const std::string& value, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

 private:
  k8s::ApiClient client_;
  const std::string node_;
  const std::string annotation_;
};

}  // namespace fracpack::node
