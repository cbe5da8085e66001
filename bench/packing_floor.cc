// The packing floor (issue 39, docs/packing-floor.md): for an openb
// experiment (a trace, tune 1.3, a seed: the very arrival sequence the
// replay runs), bounds on the unallocated GPU that no placement policy can
// beat, from linear programs solved with GLPK. Every bound is on the final
// state; alloc@130 (a mean over the last arrivals) is at most the final
// allocation, as nothing leaves.
//
//   * skip any: the most GPU any subset of the arrivals packs into the
//     cluster (order ignored; a cutting-stock LP over card patterns, which
//     shares share a card, with column generation so every pattern counts;
//     the node types' cards, CPU and memory summed per type).
//   * forced: the same with the pods every policy places. The replay places
//     a pod whenever some node takes it and never removes one, so a pod is
//     refused only if the pods placed before it closed every node it fits
//     (too little CPU or memory left, or too few cards with room). For each
//     pod shape an LP asks whether the pods that arrived earlier could do
//     that (relaxed: counts per node type, fractions, any of them put
//     anywhere they fit an empty node or left out); before the first arrival
//     where it can, every pod of the shape is forced.
//   * online (the floor): the forced bound, and per shape the arrivals placed
//     are those before it was closed (closed stays closed: nothing leaves),
//     and a shape closed closes every shape that needs at least as much of
//     everything on a subset of its nodes (dominance). So refusing the
//     trace's 810-milli shares costs the whole-card pods that need more
//     room: an LP over `buckets` time points (open[s][t] in [0, 1]).
//
// Prints one row per seed and the mean per workload, % of the cluster's GPU
// capacity; --detail adds where the floor's unallocated GPU is.
//
//   build/bench/packing_floor [--trace-dir DIR] [--workload W,...] [--mix M] [--seeds 42-51] [--tune 1.3]
//                             [--buckets 100] [--detail]
//
// Built only when GLPK (Debian: libglpk-dev) is installed; never on the test path.
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "scheduling/go_rand.h"
#include "scheduling/replay/experiment.h"
#include "scheduling/replay/mixes.h"

namespace {

using fracpack::replay::OpenbNode;
using fracpack::replay::OpenbPod;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Nodes alike for placement: model, cards, CPU, memory.
struct NodeType {
  std::string model;
  int gpus = 0;
  int64_t cpu = 0;     // milli
  int64_t memory = 0;  // MiB
  int count = 0;
};

// Pods alike for placement, with how many of them arrive and are forced.
struct Shape {
  int k = 0;        // cards (0: CPU only)
  int u = 0;        // milli per card
  int64_t cpu = 0;  // milli
  int64_t memory = 0;
  std::vector<std::string> models;  // empty: any
  int64_t arrivals = 0;
  int64_t forced = 0;       // arrivals every policy places
  size_t closable_at = 0;   // first arrival index whose predecessors could close every node to it
  std::vector<size_t> at;   // arrival indices
  bool gpu() const { return k > 0 && u > 0; }
  bool share() const { return k == 1 && u < 1000; }
};

bool fits_empty(const Shape& s, const NodeType& t) {
  if (s.cpu > t.cpu || s.memory > t.memory) return false;
  if (!s.gpu()) return true;
  if (s.k > t.gpus) return false;
  return s.models.empty() || std::find(s.models.begin(), s.models.end(), t.model) != s.models.end();
}

struct Problem {
  std::vector<NodeType> types;
  std::vector<Shape> shapes;
  std::vector<size_t> shape_of;  // per arrival
  std::vector<int64_t> demand;   // per arrival, GPU milli
  int64_t capacity_milli = 0;
};

Problem build(const fracpack::replay::ExperimentSetup& setup) {
  Problem p;
  std::map<std::tuple<std::string, int, int64_t, int64_t>, size_t> tindex;
  for (const OpenbNode& n : setup.nodes) {
    auto key = std::make_tuple(n.model, n.gpus, n.cpu_milli, n.memory_mib);
    auto [it, added] = tindex.emplace(key, p.types.size());
    if (added) p.types.push_back(NodeType{n.model, n.gpus, n.cpu_milli, n.memory_mib, 0});
    ++p.types[it->second].count;
    p.capacity_milli += 1000 * int64_t{n.gpus};
  }
  std::map<std::tuple<int, int, int64_t, int64_t, std::string>, size_t> sindex;
  for (size_t i = 0; i < setup.arrivals.size(); ++i) {
    const OpenbPod& a = setup.arrivals[i];
    const int k = a.num_gpu > 0 ? a.num_gpu : 0;
    const int u = k > 0 ? a.gpu_milli : 0;
    std::vector<std::string> models = k > 0 ? split(a.gpu_spec, '|') : std::vector<std::string>{};
    std::sort(models.begin(), models.end());
    std::string joined;
    for (const auto& m : models) joined += m + "|";
    auto key = std::make_tuple(k, u, a.cpu_milli, a.memory_mib, joined);
    auto [it, added] = sindex.emplace(key, p.shapes.size());
    if (added) {
      Shape s;
      s.k = k;
      s.u = u;
      s.cpu = a.cpu_milli;
      s.memory = a.memory_mib;
      s.models = models;
      p.shapes.push_back(std::move(s));
    }
    Shape& s = p.shapes[it->second];
    ++s.arrivals;
    s.at.push_back(i);
    p.shape_of.push_back(it->second);
    p.demand.push_back(a.gpu_request());
  }
  return p;
}

// ---------------------------------------------------------------------------
// 1. Forced pods: can the pods before arrival i close every node a pod of
// shape `target` could go to?

class BlockingLp {
 public:
  BlockingLp(const Problem& p, const Shape& target) : p_(p) {
    lp_ = glp_create_prob();
    glp_set_obj_dir(lp_, GLP_MAX);
    for (size_t t = 0; t < p.types.size(); ++t) {
      if (fits_empty(target, p.types[t])) compatible_.push_back(t);
    }
    if (compatible_.empty()) return;
    // Rows: per compatible type, its node count; per (type, mode) the mode's
    // threshold and three capacities; per material shape, its count.
    const double theta = 1000.0 - target.u + 1;  // used milli that closes a card
    for (size_t t : compatible_) total_nodes_ += p.types[t].count;
    struct Mode {
      int row_count, row_need, row_cpu, row_mem, row_gpu;
    };
    std::vector<std::array<Mode, 3>> modes(compatible_.size());
    std::vector<std::array<int, 3>> bcol(compatible_.size());
    for (size_t ci = 0; ci < compatible_.size(); ++ci) {
      const NodeType& T = p.types[compatible_[ci]];
      const int count_row = glp_add_rows(lp_, 1);
      glp_set_row_bnds(lp_, count_row, GLP_UP, 0, T.count);
      for (int m = 0; m < 3; ++m) {
        Mode& md = modes[ci][m];
        md.row_count = count_row;
        md.row_need = glp_add_rows(lp_, 4);
        md.row_cpu = md.row_need + 1;
        md.row_mem = md.row_need + 2;
        md.row_gpu = md.row_need + 3;
        for (int r = 0; r < 4; ++r) glp_set_row_bnds(lp_, md.row_need + r, r == 0 ? GLP_LO : GLP_UP, 0, 0);
        // The node column b: closed nodes of this type in this mode.
        const int b = glp_add_cols(lp_, 1);
        bcol[ci][m] = b;
        glp_set_col_bnds(lp_, b, GLP_LO, 0, 0);
        glp_set_obj_coef(lp_, b, 1);
        double need = 0;
        if (m == 0) need = static_cast<double>(T.cpu - target.cpu + 1) / 1000;           // cores
        if (m == 1) need = static_cast<double>(T.memory - target.memory + 1) / 1024;     // GiB
        if (m == 2) need = T.gpus - target.k + 1;                                        // cards
        add(count_row, b, 1);
        add(md.row_need, b, -need);
        add(md.row_cpu, b, -static_cast<double>(T.cpu) / 1000);
        add(md.row_mem, b, -static_cast<double>(T.memory) / 1024);
        add(md.row_gpu, b, -static_cast<double>(T.gpus));
      }
    }
    // Material: every shape, on each compatible type it fits, in each mode.
    for (size_t s = 0; s < p.shapes.size(); ++s) {
      const Shape& q = p.shapes[s];
      const int row = glp_add_rows(lp_, 1);
      material_row_.push_back(row);
      glp_set_row_bnds(lp_, row, GLP_UP, 0, 0);
      for (size_t ci = 0; ci < compatible_.size(); ++ci) {
        if (!fits_empty(q, p.types[compatible_[ci]])) continue;
        for (int m = 0; m < 3; ++m) {
          const Mode& md = modes[ci][m];
          double contribution = 0;
          if (m == 0) contribution = static_cast<double>(q.cpu) / 1000;
          if (m == 1) contribution = static_cast<double>(q.memory) / 1024;
          if (m == 2) contribution = q.gpu() ? q.k * std::min(1.0, q.u / theta) : 0;
          if (contribution <= 0) continue;  // of no use for closing a node this way
          const int x = glp_add_cols(lp_, 1);
          glp_set_col_bnds(lp_, x, GLP_LO, 0, 0);
          add(row, x, 1);
          add(md.row_need, x, contribution);
          add(md.row_cpu, x, static_cast<double>(q.cpu) / 1000);
          add(md.row_mem, x, static_cast<double>(q.memory) / 1024);
          if (q.gpu()) add(md.row_gpu, x, q.k * q.u / 1000.0);
        }
      }
    }
    glp_load_matrix(lp_, static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(), ar_.data());
    glp_init_smcp(&parm_);
    parm_.msg_lev = GLP_MSG_OFF;
    parm_.presolve = GLP_OFF;
  }
  ~BlockingLp() { glp_delete_prob(lp_); }
  BlockingLp(const BlockingLp&) = delete;
  BlockingLp& operator=(const BlockingLp&) = delete;

  bool never_fits() const { return compatible_.empty(); }

  // Can the arrivals before `i` close every node of a compatible type?
  bool closable_before(size_t i) {
    std::vector<int64_t> count(p_.shapes.size(), 0);
    for (size_t j = 0; j < i; ++j) ++count[p_.shape_of[j]];
    for (size_t s = 0; s < p_.shapes.size(); ++s) {
      glp_set_row_bnds(lp_, material_row_[s], GLP_UP, 0, static_cast<double>(count[s]));
    }
    if (glp_simplex(lp_, &parm_) != 0 || glp_get_status(lp_) != GLP_OPT) {
      parm_.presolve = GLP_ON;  // recover from a bad basis
      glp_std_basis(lp_);
      const int rc = glp_simplex(lp_, &parm_);
      parm_.presolve = GLP_OFF;
      if (rc != 0 || glp_get_status(lp_) != GLP_OPT) {
        std::fprintf(stderr, "packing_floor: blocking LP failed (rc %d); counting the pod as not forced\n", rc);
        return true;  // the sound answer when unsure
      }
    }
    // Forced only when the LP cannot close every node, beyond the solver's tolerance.
    return glp_get_obj_val(lp_) >= total_nodes_ - 1e-6;
  }

 private:
  void add(int row, int col, double v) {
    ia_.push_back(row);
    ja_.push_back(col);
    ar_.push_back(v);
  }
  const Problem& p_;
  glp_prob* lp_ = nullptr;
  glp_smcp parm_{};
  std::vector<size_t> compatible_;
  double total_nodes_ = 0;
  std::vector<int> material_row_;
  std::vector<int> ia_{0}, ja_{0};
  std::vector<double> ar_{0};
};

// For each shape, the first arrival index whose predecessors could close
// every node it fits (closing only gets easier as more pods arrive): before
// it the shape is open, and its arrivals up to there are forced.
void find_closable(Problem& p) {
  const size_t n = p.shape_of.size();
  for (Shape& s : p.shapes) {
    BlockingLp lp(p, s);
    if (lp.never_fits()) {
      s.closable_at = 0;  // no node takes it: closed from the start
      s.forced = 0;
      continue;
    }
    size_t lo = 0, hi = n + 1;  // answer in [lo, hi]; n + 1: never closable
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (lp.closable_before(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    s.closable_at = lo;
    s.forced = std::count_if(s.at.begin(), s.at.end(), [&](size_t i) { return i < lo; });
  }
}

// a needs at least what b needs in every resource, on a subset of b's nodes:
// whatever closes every node to b closes every node to a.
bool dominates(const Shape& a, const Shape& b) {
  if (a.cpu < b.cpu || a.memory < b.memory) return false;
  if (!b.gpu()) return true;
  if (!a.gpu() || a.k < b.k || a.u < b.u) return false;
  if (b.models.empty()) return true;
  if (a.models.empty()) return false;
  return std::includes(b.models.begin(), b.models.end(), a.models.begin(), a.models.end());
}

// ---------------------------------------------------------------------------
// 2. The most GPU a final state can hold: cutting stock over card patterns.

// Shares that fill one card of a node type together: a count per share size.
struct Pattern {
  size_t type;
  std::vector<int> count;
};

struct Floor {
  double allocated_milli = 0;
  double unallocated_percent = 0;
  // Where the unallocated GPU is, in the LP's optimum (milli): cards left
  // empty, and the room left on cards holding shares, by the largest share.
  std::map<std::string, double> empty_cards_by_model;
  std::map<int, double> share_room_by_largest;
  std::vector<double> placed;  // per shape
  std::vector<Pattern> patterns;  // every pattern generated (to start the next bound from)
};

// The bounds, from loosest to tightest: each adds what every policy's final
// state must also satisfy.
enum class Bound {
  kSkipAny,  // any subset of the arrivals (order ignored)
  kForced,   // the forced pods placed
  kOnline,   // and per shape, the arrivals placed are those before it was
             // closed; a shape closed closes every shape it dominates
};

// The time points of the online bound: from the first index where some
// shape could be closed to the end, `buckets` spans of equal arrival counts.
std::vector<size_t> time_points(const Problem& p, int buckets) {
  const size_t n = p.shape_of.size();
  size_t first = n;
  for (const Shape& s : p.shapes) {
    if (s.closable_at > 0) first = std::min(first, s.closable_at);  // 0: fits nowhere, never placed
  }
  std::vector<size_t> t;
  for (int b = 0; b <= buckets; ++b) {
    const size_t at = first + (n - first) * static_cast<size_t>(b) / static_cast<size_t>(buckets);
    if (t.empty() || at > t.back()) t.push_back(at);
  }
  if (t.back() != n) t.push_back(n);
  return t;
}

Floor max_allocation(const Problem& p, Bound bound, int buckets, const std::vector<Pattern>& start = {}) {
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MAX);
  const size_t nt = p.types.size();
  std::set<int> sizes_set;
  for (const Shape& s : p.shapes) {
    if (s.share()) sizes_set.insert(s.u);
  }
  const std::vector<int> sizes(sizes_set.begin(), sizes_set.end());
  // Rows per type: cards, CPU, memory, then one link row per share size.
  std::vector<int> card_row(nt), cpu_row(nt), mem_row(nt);
  std::vector<std::vector<int>> link_row(nt, std::vector<int>(sizes.size(), 0));
  for (size_t t = 0; t < nt; ++t) {
    const NodeType& T = p.types[t];
    card_row[t] = glp_add_rows(lp, 3);
    cpu_row[t] = card_row[t] + 1;
    mem_row[t] = card_row[t] + 2;
    glp_set_row_bnds(lp, card_row[t], GLP_UP, 0, double(T.gpus) * T.count);
    glp_set_row_bnds(lp, cpu_row[t], GLP_UP, 0, double(T.cpu) / 1000 * T.count);
    glp_set_row_bnds(lp, mem_row[t], GLP_UP, 0, double(T.memory) / 1024 * T.count);
    if (T.gpus == 0) continue;
    for (size_t z = 0; z < sizes.size(); ++z) {
      link_row[t][z] = glp_add_rows(lp, 1);
      glp_set_row_bnds(lp, link_row[t][z], GLP_UP, 0, 0);
    }
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  auto add = [&](int r, int c, double v) {
    ia.push_back(r);
    ja.push_back(c);
    ar.push_back(v);
  };
  // The online bound's variables: open[s][b] in [0, 1], shape s not closed
  // at time point b (1 where no placement of the earlier pods could close it).
  const std::vector<size_t> tp = bound == Bound::kOnline ? time_points(p, buckets) : std::vector<size_t>{};
  const size_t nb = tp.size();  // points; nb - 1 spans between them
  std::vector<std::vector<int>> open(p.shapes.size());
  if (bound == Bound::kOnline) {
    for (size_t si = 0; si < p.shapes.size(); ++si) {
      const Shape& s = p.shapes[si];
      open[si].resize(nb);
      for (size_t b = 0; b < nb; ++b) {
        const int c = glp_add_cols(lp, 1);
        open[si][b] = c;
        if (s.closable_at == 0) {
          glp_set_col_bnds(lp, c, GLP_FX, 0, 0);
        } else if (tp[b] < s.closable_at) {
          glp_set_col_bnds(lp, c, GLP_FX, 1, 1);
        } else {
          glp_set_col_bnds(lp, c, GLP_DB, 0, 1);
        }
        if (b > 0) {  // once closed, closed for good: open[b] <= open[b-1]
          const int r = glp_add_rows(lp, 1);
          glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
          add(r, c, 1);
          add(r, open[si][b - 1], -1);
        }
      }
    }
    // Dominance, transitively reduced: open[a][b] <= open[d][b] when a dominates d.
    const size_t ns = p.shapes.size();
    std::vector<std::vector<char>> dom(ns, std::vector<char>(ns, 0));
    for (size_t a = 0; a < ns; ++a) {
      for (size_t d = 0; d < ns; ++d) dom[a][d] = a != d && dominates(p.shapes[a], p.shapes[d]);
    }
    for (size_t a = 0; a < ns; ++a) {
      for (size_t d = 0; d < ns; ++d) {
        if (!dom[a][d]) continue;
        bool implied = false;
        for (size_t m = 0; m < ns && !implied; ++m) implied = dom[a][m] && dom[m][d];
        if (implied) continue;
        for (size_t b = 0; b < nb; ++b) {
          const int r = glp_add_rows(lp, 1);
          glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
          add(r, open[a][b], 1);
          add(r, open[d][b], -1);
        }
      }
    }
  }
  std::vector<std::vector<int>> placed_cols(p.shapes.size());
  for (size_t si = 0; si < p.shapes.size(); ++si) {
    const Shape& s = p.shapes[si];
    const int row = glp_add_rows(lp, 1);
    const double lo = bound == Bound::kSkipAny ? 0 : double(s.forced), hi = double(s.arrivals);
    glp_set_row_bnds(lp, row, lo == hi ? GLP_FX : GLP_DB, lo, hi);
    int row_lo = 0, row_hi = 0;
    if (bound == Bound::kOnline) {
      // Placed: at least the arrivals of the spans it is still open after,
      // at most those of the spans it is open at the start of (and all
      // arrivals before the first point).
      std::vector<double> per_span(nb, 0);
      double before = 0;
      for (size_t i : s.at) {
        if (i < tp[0]) {
          before += 1;
        } else {
          const size_t b = static_cast<size_t>(std::upper_bound(tp.begin(), tp.end(), i) - tp.begin()) - 1;
          per_span[b] += 1;
        }
      }
      row_lo = glp_add_rows(lp, 1);
      row_hi = glp_add_rows(lp, 1);
      glp_set_row_bnds(lp, row_lo, GLP_LO, before, 0);
      glp_set_row_bnds(lp, row_hi, GLP_UP, 0, before);
      for (size_t b = 0; b + 1 < nb; ++b) {
        if (per_span[b] == 0) continue;
        add(row_lo, open[si][b + 1], -per_span[b]);
        add(row_hi, open[si][b], -per_span[b]);
      }
    }
    const size_t z = s.share() ? size_t(std::lower_bound(sizes.begin(), sizes.end(), s.u) - sizes.begin()) : 0;
    for (size_t t = 0; t < nt; ++t) {
      if (!fits_empty(s, p.types[t])) continue;
      const int x = glp_add_cols(lp, 1);
      placed_cols[si].push_back(x);
      glp_set_col_bnds(lp, x, GLP_LO, 0, 0);
      glp_set_obj_coef(lp, x, s.gpu() ? s.k * s.u / 1000.0 : 0);
      add(row, x, 1);
      if (row_lo != 0) {
        add(row_lo, x, 1);
        add(row_hi, x, 1);
      }
      add(cpu_row[t], x, double(s.cpu) / 1000);
      add(mem_row[t], x, double(s.memory) / 1024);
      if (s.share()) {
        add(link_row[t][z], x, 1);
      } else if (s.gpu()) {
        add(card_row[t], x, s.k);
      }
    }
  }
  std::vector<Pattern> patterns;
  std::vector<int> pattern_col;
  auto add_pattern = [&](size_t t, std::vector<int> count, bool loaded) {
    const int c = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, c, GLP_LO, 0, 0);
    std::vector<int> ind{0, card_row[t]};
    std::vector<double> val{0, 1};
    for (size_t z = 0; z < sizes.size(); ++z) {
      if (count[z] == 0) continue;
      ind.push_back(link_row[t][z]);
      val.push_back(-count[z]);
    }
    if (loaded) {
      glp_set_mat_col(lp, c, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
    } else {
      for (size_t i = 1; i < ind.size(); ++i) add(ind[i], c, val[i]);
    }
    patterns.push_back(Pattern{t, std::move(count)});
    pattern_col.push_back(c);
  };
  for (size_t t = 0; t < nt; ++t) {
    if (p.types[t].gpus == 0) continue;
    for (size_t z = 0; z < sizes.size(); ++z) {
      std::vector<int> count(sizes.size(), 0);
      count[z] = 1000 / sizes[z];
      add_pattern(t, count, false);
    }
  }
  for (const Pattern& pt : start) add_pattern(pt.type, pt.count, false);  // a looser bound's columns
  glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;  // the first solve only: the online bound has many fixed columns
  Floor out;
  for (int round = 0;; ++round) {
    const int rc = glp_simplex(lp, &parm);
    if (rc != 0 || glp_get_status(lp) != GLP_OPT) {
      std::fprintf(stderr, "packing_floor: allocation LP not solved (rc %d, status %d)\n", rc, glp_get_status(lp));
      std::exit(1);
    }
    parm.presolve = GLP_OFF;
    // Pricing: per type, the card pattern worth most at the link rows' duals
    // (an unbounded knapsack over milli), against the card row's dual.
    bool added = false;
    for (size_t t = 0; t < nt; ++t) {
      if (p.types[t].gpus == 0) continue;
      std::vector<double> best(1001, 0);
      std::vector<int> last(1001, -1);
      for (int cap = 1; cap <= 1000; ++cap) {
        best[cap] = best[cap - 1];
        last[cap] = -2;  // inherit
        for (size_t z = 0; z < sizes.size(); ++z) {
          const double y = glp_get_row_dual(lp, link_row[t][z]);
          if (sizes[z] <= cap && y > 1e-12 && best[cap - sizes[z]] + y > best[cap] + 1e-12) {
            best[cap] = best[cap - sizes[z]] + y;
            last[cap] = static_cast<int>(z);
          }
        }
      }
      // Reduced cost of the pattern column: -dual(cards) + sum dual(link) x count.
      if (best[1000] - glp_get_row_dual(lp, card_row[t]) <= 1e-9) continue;
      std::vector<int> count(sizes.size(), 0);
      for (int cap = 1000; cap > 0;) {
        if (last[cap] == -2) {
          --cap;
        } else if (last[cap] >= 0) {
          ++count[static_cast<size_t>(last[cap])];
          cap -= sizes[static_cast<size_t>(last[cap])];
        } else {
          break;
        }
      }
      add_pattern(t, std::move(count), true);
      added = true;
    }
    if (!added) break;
    if (round > 10000) {
      std::fprintf(stderr, "packing_floor: column generation did not converge\n");
      std::exit(1);
    }
  }
  out.allocated_milli = 1000 * glp_get_obj_val(lp);
  out.unallocated_percent = 100.0 * (double(p.capacity_milli) - out.allocated_milli) / double(p.capacity_milli);
  out.patterns = patterns;
  for (const auto& cols : placed_cols) {
    double v = 0;
    for (int c : cols) v += glp_get_col_prim(lp, c);
    out.placed.push_back(v);
  }
  // Where the rest is: cards not used at all, and room on cards with
  // shares, by the largest share their pattern holds. A pattern's slots are
  // filled in proportion to the pods of the size (the link rows' activity).
  std::vector<std::vector<double>> filled(nt, std::vector<double>(sizes.size(), 1));
  for (size_t t = 0; t < nt; ++t) {
    for (size_t z = 0; z < sizes.size() && p.types[t].gpus > 0; ++z) {
      double slots = 0;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (patterns[i].type == t) slots += patterns[i].count[z] * glp_get_col_prim(lp, pattern_col[i]);
      }
      const double slack = -glp_get_row_prim(lp, link_row[t][z]);  // slots - pods >= 0
      if (slots > 1e-9) filled[t][z] = std::clamp(1 - slack / slots, 0.0, 1.0);
    }
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    const double v = glp_get_col_prim(lp, pattern_col[i]);
    if (v <= 1e-9) continue;
    const Pattern& pt = patterns[i];
    double milli = 0;
    int largest = 0;
    for (size_t z = 0; z < sizes.size(); ++z) {
      milli += pt.count[z] * sizes[z] * filled[pt.type][z];
      if (pt.count[z] > 0) largest = std::max(largest, sizes[z]);
    }
    out.share_room_by_largest[largest] += v * (1000 - milli);
  }
  // Whole cards: the card row's activity less the pattern cards.
  for (size_t t = 0; t < nt; ++t) {
    const NodeType& T = p.types[t];
    const double cards_used = glp_get_row_prim(lp, card_row[t]);
    out.empty_cards_by_model[T.model] += 1000 * (double(T.gpus) * T.count - cards_used);
  }
  glp_delete_prob(lp);
  return out;
}

struct SeedRange {
  int64_t first = 42, last = 51;
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/traces/openb", workloads = "default,cpu100,gpushare40,gpuspec33,multigpu20", mix;
  SeedRange seeds;
  double tune = 1.3;
  int buckets = 100;
  bool detail = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--trace-dir" && has) dir = argv[++i];
    else if (a == "--workload" && has) workloads = argv[++i];
    else if (a == "--mix" && has) mix = argv[++i];
    else if (a == "--tune" && has) tune = std::atof(argv[++i]);
    else if (a == "--buckets" && has) buckets = std::max(1, std::atoi(argv[++i]));
    else if (a == "--detail") detail = true;
    else if (a == "--seeds" && has) {
      const std::string s = argv[++i];
      const auto dash = s.find('-');
      seeds.first = std::atoll(s.substr(0, dash).c_str());
      seeds.last = dash == std::string::npos ? seeds.first : std::atoll(s.substr(dash + 1).c_str());
    } else {
      std::fprintf(stderr,
                   "usage: packing_floor [--trace-dir DIR] [--workload W,...] [--mix M] [--seeds 42-51] [--tune 1.3] "
                   "[--buckets 100] [--detail]\n");
      return 2;
    }
  }
  glp_term_out(GLP_OFF);
  auto nodes = fracpack::replay::parse_openb_nodes(slurp(dir + "/openb_node_list_gpu_node.csv"));
  if (!nodes) {
    std::fprintf(stderr, "packing_floor: %s\n", nodes.message().c_str());
    return 1;
  }
  fracpack::replay::ExperimentOptions eo;
  eo.tune = tune;
  if (auto go = slurp(fracpack::kDefaultGoRngSource); !go.empty()) {
    if (auto t = fracpack::parse_go_rng_cooked(go)) eo.go_cooked = std::make_shared<std::vector<int64_t>>(*t);
  }
  if (!eo.go_cooked) {
    std::fprintf(stderr, "packing_floor: no %s: a portable RNG (not the paper's order)\n", fracpack::kDefaultGoRngSource);
  }
  std::printf("Unallocated GPU at best, %% of capacity (tune %.2f; %d spans for the online bound)\n\n", tune, buckets);
  std::printf("| workload | seed | arrivals | forced pods | forced GPU %% of capacity | skip any pod | forced placed | floor (online) |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const std::string& w : split(workloads, ',')) {
    auto pods = fracpack::replay::parse_openb_pods(slurp(dir + "/openb_pod_list_" + w + ".csv"));
    if (!pods) {
      std::fprintf(stderr, "packing_floor: %s: %s\n", w.c_str(), pods.message().c_str());
      return 1;
    }
    std::string label = w;
    if (!mix.empty()) {
      auto steps = fracpack::replay::parse_mix(mix);
      auto specs = fracpack::replay::parse_openb_pods(slurp(dir + "/openb_pod_list_gpuspec33.csv"));
      if (!steps || !specs) {
        std::fprintf(stderr, "packing_floor: --mix %s: cannot build\n", mix.c_str());
        return 1;
      }
      auto mixed = fracpack::replay::build_mix(fracpack::replay::MixInputs{*pods, *nodes, *specs, 1}, *steps);
      if (!mixed) {
        std::fprintf(stderr, "packing_floor: --mix %s: %s\n", mix.c_str(), mixed.message().c_str());
        return 1;
      }
      *pods = std::move(*mixed);
      label = w + "+" + mix;
    }
    double sum[3] = {0, 0, 0};
    int n = 0;
    for (int64_t seed = seeds.first; seed <= seeds.last; ++seed) {
      eo.seed = seed;
      const auto setup = fracpack::replay::prepare_experiment(*nodes, *pods, eo);
      Problem p = build(setup);
      const auto t0 = std::chrono::steady_clock::now();
      find_closable(p);
      const auto t1 = std::chrono::steady_clock::now();
      int64_t forced = 0, forced_milli = 0;
      for (const Shape& s : p.shapes) {
        forced += s.forced;
        forced_milli += s.forced * s.k * s.u;
      }
      const Floor any = max_allocation(p, Bound::kSkipAny, buckets);
      const Floor forced_only = max_allocation(p, Bound::kForced, buckets, any.patterns);
      const auto t2 = std::chrono::steady_clock::now();
      const Floor online = max_allocation(p, Bound::kOnline, buckets, forced_only.patterns);
      const auto t3 = std::chrono::steady_clock::now();
      std::fprintf(stderr, "packing_floor: %s seed %lld: closing LPs %.1f s, skip-any and forced LPs %.1f s, online LP %.1f s\n",
                   label.c_str(), static_cast<long long>(seed), std::chrono::duration<double>(t1 - t0).count(),
                   std::chrono::duration<double>(t2 - t1).count(), std::chrono::duration<double>(t3 - t2).count());
      std::printf("| %s | %lld | %zu | %lld | %.2f | %.3f | %.3f | %.3f |\n", label.c_str(), static_cast<long long>(seed),
                  setup.arrivals.size(), static_cast<long long>(forced),
                  100.0 * double(forced_milli) / double(p.capacity_milli), any.unallocated_percent,
                  forced_only.unallocated_percent, online.unallocated_percent);
      if (detail) {
        const double cap = double(p.capacity_milli);
        std::printf("    online bound: %zu card patterns generated\n", online.patterns.size());
        for (const auto& [model, milli] : online.empty_cards_by_model) {
          if (milli > 0.5) std::printf("    empty cards, %s: %.3f %%\n", model.c_str(), 100 * milli / cap);
        }
        for (const auto& [largest, milli] : online.share_room_by_largest) {
          if (milli > 0.5) {
            std::printf("    room on cards whose largest share is %d: %.3f %%\n", largest, 100 * milli / cap);
          }
        }
        for (size_t si = 0; si < p.shapes.size(); ++si) {
          const Shape& s = p.shapes[si];
          if (s.arrivals < 40) continue;
          int64_t arrived = 0;
          for (size_t j = 0; j < std::min(s.closable_at, p.demand.size()); ++j) arrived += p.demand[j];
          std::printf("    shape %dx%d cpu %lld mem %lld%s: %lld arrive, %lld forced (closable from %.1f %% arrived), "
                      "placed at most %.1f\n",
                      s.k, s.u, static_cast<long long>(s.cpu), static_cast<long long>(s.memory),
                      s.models.empty() ? "" : " (models)", static_cast<long long>(s.arrivals),
                      static_cast<long long>(s.forced), 100.0 * double(arrived) / cap, online.placed[si]);
        }
      }
      std::fflush(stdout);
      sum[0] += any.unallocated_percent;
      sum[1] += forced_only.unallocated_percent;
      sum[2] += online.unallocated_percent;
      ++n;
    }
    std::printf("| %s | mean | | | | %.3f | %.3f | %.3f |\n", label.c_str(), sum[0] / n, sum[1] / n, sum[2] / n);
  }
  return 0;
}
