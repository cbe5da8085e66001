// The standalone binder (`serve --snapshot`): a job runs at once on the
// caller's thread, with no connection: the bind service applies the Binding
// to the store as the watch would. A single writer: no fence, no node
// lock, no Events.
#pragma once

#include "server/binder.h"

namespace fracpack::server {

class InMemoryBinder final : public Binder {
 public:
  void run(Job job) override { job(&worker_); }

 private:
  const Worker worker_{};
};

}  // namespace fracpack::server
