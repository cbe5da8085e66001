#include "scheduling/quota.h"

#include <algorithm>

namespace fracpack::scheduling {

namespace {

// Kubernetes' effective request, dimension by dimension: the app containers
// run together, each init container alone before them.
template <class Container, class UseOf>
QuotaUse effective(const std::vector<Container>& containers, UseOf use_of) {
  QuotaUse app, init;
  for (const Container& c : containers) {
    const QuotaUse u = use_of(c);
    if (c.init) {
      init.cards = std::max(init.cards, u.cards);
      init.memory_mib = std::max(init.memory_mib, u.memory_mib);
      init.cores_milli = std::max(init.cores_milli, u.cores_milli);
    } else {
      app += u;
    }
  }
  return {std::max(app.cards, init.cards), std::max(app.memory_mib, init.memory_mib), std::max(app.cores_milli, init.cores_milli)};
}

// "3 cards", "1 card", "4096 MiB", "150 percent of a card".
std::string amount_text(int64_t n, QuotaResource r) {
  const std::string v = std::to_string(n);
  switch (r) {
    case QuotaResource::kCards:
      return v + (n == 1 ? " card" : " cards");
    case QuotaResource::kMemoryMib:
      return v + " MiB";
    case QuotaResource::kCoresPercent:
      return v + " percent of a card";
  }
  return v;
}

}  // namespace

QuotaUse quota_use(const Allocation& allocation) {
  return effective(allocation.containers, [](const ContainerAllocation& c) {
    QuotaUse u;
    for (const CardShare& s : c.cards) {
      ++u.cards;
      u.memory_mib += s.memory_mib;
      u.cores_milli += s.cores;
    }
    return u;
  });
}

QuotaUse quota_use(const PodRequest& pod) {
  return effective(pod.containers, [](const ContainerRequest& c) {
    return QuotaUse{c.cards, int64_t{c.cards} * c.memory_mib, int64_t{c.cards} * c.cores};
  });
}

QuotaUse quota_use(const PodRequest& pod, int64_t card_mib) {
  return effective(pod.containers, [card_mib](const ContainerRequest& c) {
    return QuotaUse{c.cards, int64_t{c.cards} * c.memory_on(card_mib), int64_t{c.cards} * c.cores};
  });
}

int64_t quota_amount(const QuotaUse& use, QuotaResource resource) {
  switch (resource) {
    case QuotaResource::kCards:
      return use.cards;
    case QuotaResource::kMemoryMib:
      return use.memory_mib;
    case QuotaResource::kCoresPercent:
      return (use.cores_milli + 9) / 10;
  }
  return 0;
}

Status quota_admits(const std::string& namespace_name, const std::vector<QuotaLimit>& limits, const QuotaUse& used,
                    const QuotaUse& asked) {
  for (const QuotaLimit& l : limits) {
    const std::string where = "ResourceQuota " + namespace_name + "/" + l.object + " " + l.key;
    if (!l.malformed.empty()) {
      return Error{where + " cannot be read (" + l.malformed + "): no new GPU placement in namespace " + namespace_name +
                   " until it is fixed"};
    }
    const int64_t ask = quota_amount(asked, l.resource);
    if (ask == 0) continue;  // asks nothing of this limit: a lowered quota keeps what runs
    QuotaUse total = used;
    total += asked;
    const int64_t after = quota_amount(total, l.resource);
    if (after > l.hard) {
      return Error{"exceeds " + where + ": used " + amount_text(quota_amount(used, l.resource), l.resource) + ", asked " +
                   amount_text(ask, l.resource) + ", hard " + amount_text(l.hard, l.resource)};
    }
  }
  return Status::Ok();
}

bool quota_depends_on_card(const std::vector<QuotaLimit>& limits, const PodRequest& pod) {
  const bool memory_limited = std::any_of(limits.begin(), limits.end(),
                                          [](const QuotaLimit& l) { return l.resource == QuotaResource::kMemoryMib; });
  if (!memory_limited) return false;
  return std::any_of(pod.containers.begin(), pod.containers.end(), [](const ContainerRequest& c) { return c.memory_percent != 0; });
}

}  // namespace fracpack::scheduling
