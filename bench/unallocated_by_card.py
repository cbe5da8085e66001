#!/usr/bin/env python3
"""Where a replay's unallocated GPU is at the end of the run (docs/packing-floor.md).

    fracpack replay openb --workload W --policy fgd,fracpack --seeds 42 --placements /tmp/p.csv
    bench/unallocated_by_card.py /tmp/p.csv ../shared/traces/openb/openb_pod_list_W.csv \\
        [../shared/traces/openb/openb_node_list_gpu_node.csv] [--top 12]

Replays the placements file (every arrival's node and cards, the first seed
per policy) onto the node list and prints, per policy, the free GPU milli of
every card, as % of the cluster's GPU capacity, in two kinds:

  * cards left empty, by model, and whether their node still had the CPU and
    memory of the smallest GPU pod of the list (if not, CPU or memory
    stranded them);
  * room left on cards holding shares, by the shares on the card ("810" is
    an 810-milli share alone, 190 free; "470+470" two 470s, 60 free).

Standard library only; for reports, not on the test path.
"""
import collections
import csv
import sys


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    top = 12
    if "--top" in argv:
        top = int(argv[argv.index("--top") + 1])
        args.remove(str(top))
    if len(args) < 2:
        sys.exit(__doc__)
    placements, pod_list = args[0], args[1]
    node_list = args[2] if len(args) > 2 else pod_list.rsplit("/", 1)[0] + "/openb_node_list_gpu_node.csv"
    nodes = {r["sn"]: r for r in csv.DictReader(open(node_list))}
    pods = {r["name"]: r for r in csv.DictReader(open(pod_list))}
    capacity = 1000 * sum(int(n["gpu"]) for n in nodes.values())
    gpu_pods = [p for p in pods.values() if int(p["num_gpu"] or 0) > 0]
    least_cpu = min(int(p["cpu_milli"]) for p in gpu_pods)
    least_memory = min(int(p["memory_mib"]) for p in gpu_pods)

    state = {}
    for row in csv.DictReader(open(placements)):
        s = state.setdefault(row["policy"], {"cards": collections.defaultdict(list),
                                             "cpu": collections.Counter(), "memory": collections.Counter()})
        if not row["node"]:
            continue
        name = row["pod"].split("/", 1)[1].split("-tuned-")[0]  # tuned copies keep their original's resources
        pod = pods[name]
        node = row["node"].split("-", 1)[1]  # the replay prefixes a permutation number
        s["cpu"][node] += int(pod["cpu_milli"])
        s["memory"][node] += int(pod["memory_mib"])
        if int(pod["num_gpu"] or 0) > 0 and row["cards"]:
            milli = min(int(pod["gpu_milli"] or 1000), 1000) or 1000
            for card in row["cards"].split():
                s["cards"][(node, int(card))].append(milli)

    for policy, s in state.items():
        kinds = collections.Counter()
        total = 0
        for sn, n in nodes.items():
            room = int(n["cpu_milli"]) - s["cpu"][sn] >= least_cpu and int(n["memory_mib"]) - s["memory"][sn] >= least_memory
            for c in range(int(n["gpu"])):
                shares = s["cards"].get((sn, c), [])
                free = 1000 - sum(shares)
                if free <= 0:
                    continue
                total += free
                if not shares:
                    kinds["empty card, %s, %s" % (n["model"], "node has room" if room else "no CPU or memory left")] += free
                else:
                    kinds["%s (%d free)" % ("+".join(map(str, sorted(shares, reverse=True))), free)] += free
        print("%s: unallocated %.3f %% of the GPUs" % (policy, 100.0 * total / capacity))
        shown = 0
        for kind, milli in kinds.most_common():
            if shown == top:
                rest = sum(m for _, m in kinds.most_common()[top:])
                print("  %-52s %6.3f %%" % ("the rest", 100.0 * rest / capacity))
                break
            print("  %-52s %6.3f %%" % (kind, 100.0 * milli / capacity))
            shown += 1


if __name__ == "__main__":
    main(sys.argv)
