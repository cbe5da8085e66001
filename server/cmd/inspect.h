// fracpack inspect: the ledger as a terminal table (or JSON), per node and
// card, like `kubectl inspect gpushare`. The data is GET /debug/ledger of a
// running fracpack, or the same report built locally from a snapshot.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"

namespace fracpack::cli {

enum class InspectFormat { kTable, kJson };

// Renders a ledger report (server/ledger_report.h). With `node`, only that
// node's cards (an error if the ledger has no such node); the cluster totals
// are always the whole cluster's.
Result<std::string> render_inspect(const std::string& ledger_json, const std::optional<std::string>& node,
                                   InspectFormat format);
// `fracpack inspect quota [NAMESPACE]`: the report's namespace GPU quotas, a
// row per limit (namespace, object, key, used, hard), or as JSON.
Result<std::string> render_quota(const std::string& ledger_json, const std::optional<std::string>& namespace_name,
                                 InspectFormat format);

}  // namespace fracpack::cli
