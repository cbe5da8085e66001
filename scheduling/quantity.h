// Kubernetes resource quantities ("500m", "16Gi", "1e3", "2"), parsed exactly as
// apimachinery's ParseQuantity does (../shared/reference/kubernetes-protocol.md §8.4): the same
// grammar and suffix rules, exact decimal arithmetic, magnitudes rounded up
// (away from zero) to 10^-9, Value() and MilliValue() rounded up.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fracpack {

__extension__ typedef unsigned __int128 uint128_t;

class Quantity {
 public:
  // Longest input accepted; Kubernetes objects never carry longer quantities.
  static constexpr size_t kMaxLength = 256;

  static Result<Quantity> parse(std::string_view text);

  bool negative() const { return negative_ && nanos_ != 0; }
  bool is_zero() const { return nanos_ == 0; }

  // ceil(|x|) with the sign of x (Go's Value()); an error outside int64.
  Result<int64_t> value() const;
  // ceil(|x| * 1000) with the sign of x (Go's MilliValue()).
  Result<int64_t> milli_value() const;
  // Kubernetes' integer rule for extended resources: MilliValue() % 1000 == 0.
  bool is_integer() const;

 private:
  Result<int64_t> scaled_up(uint128_t divisor) const;

  bool negative_ = false;
  uint128_t nanos_ = 0;  // |x| in units of 10^-9, rounded up
};

// The three uses in the fracpack contract. Each rejects negative values and
// returns a message that says what was wrong with the text (the caller adds
// which object and field it came from).
Result<int64_t> parse_extended_resource(std::string_view text);  // non-negative integer
Result<int64_t> parse_cpu_milli(std::string_view text);          // millicores, rounded up
Result<int64_t> parse_memory_bytes(std::string_view text);       // bytes, rounded up

}  // namespace fracpack
