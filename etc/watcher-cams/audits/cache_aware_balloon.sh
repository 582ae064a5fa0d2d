#!/bin/bash
# cache_aware_balloon (goal memory_cache_efficiency): moves memory with the
# balloon from guests whose page cache does not pay off to guests where it
# does. mode=paper is the CAMS paper's method (equal cache utilization by
# fixed steps), mode=utility ours (equal marginal value of memory: the disk
# reads it saves, as QEMU measures them for each guest at the sizes it held,
# shaped between those sizes by the guest's refault counters).
# doc/source/strategies.rst says how each decides.
#
# Each utility action's reason says which signal decided it, e.g.
# (openstack optimize action list --audit AUDIT --long):
#   utility (host-measured): value 0.520 MiB/s per GiB, gets 960 MiB
#   utility (guest-reported): value 0.274 MiB/s per GiB, gives 960 MiB
#   utility (probe): measured up to 6.208 MiB/s per GiB, the donor 2.002;
#     costs at most 0.125 MiB/s of reads
#   utility (probe): 128 MiB to a scan short of its cliff, from active
#     lists; saves up to 6.000 MiB/s of reads, the donors priced at ...
#   utility (guest-reported), a tie broken by cams: cache utilization ...
# host-measured: the host's block statistics at two sizes priced the move;
# guest-reported: the guest's own counters did (after they were checked
# against what the host measured); probe: a bounded step to measure what
# neither could tell. The Horizon panel shows it as "Decided by".
#
# Parameters (openstack optimize audit create --parameter NAME=VALUE), with
# their defaults:
#   mode=utility        paper or utility
#   pages_per_step=64   paper: pages per step
#   page_mb=2           paper: MiB per page
#   max_steps=4         paper: steps per audit cycle
#   tolerance=0.05      paper: utilizations this close count as equal
#   granule_mb=64       utility: unit of memory moved (MiB)
#   min_value=0.1       utility: least disk reads saved (MiB/s per GiB of
#                       memory moved) worth a move
#   value_band=0.2      utility: share by which the gain must beat the loss
#   psi_protect=10.0    utility: guests with memory PSI some avg10 at or
#                       above this never give memory
#   memory_s=1800.0     utility: seconds a measured value at a size is kept
#                       after it was taken or last borne out; a guest whose
#                       free memory lasts longer at its read rate takes no
#                       tie
#   settle_s=60.0       utility: seconds a resize echoes in the counters
#   idle_cpu_s=0.02     utility: CPU seconds per second (host-measured) at
#                       or below which a guest reading nothing from disk is
#                       idle and gives a quarter of its cache per cycle
#   lfu_hit_ratio=0.5   double caching: instances whose host-cached disk
#                       serves less than this share of their reads from
#                       the host cache count in lfu_candidates
#   recommend_lfu=False  double caching: a nop action naming each candidate
#                       (doc/source/lfu.rst)
#   host_reserved_mb=0  MiB of each host never promised to guests, where
#                       more than Nova and the agent reserve (utility hands
#                       out the rest nobody holds)
#
# Usage: cache_aware_balloon.sh [NAME=VALUE ...]   (TEMPLATE,
# AUDIT, INTERVAL and SCOPE: see create-continuous-audit.sh)
set -euo pipefail
export TEMPLATE=${TEMPLATE:-cams-cache-aware}
export INTERVAL=${INTERVAL:-300}  # seconds between audits
exec "$(dirname "$0")/create-continuous-audit.sh" \
    memory_cache_efficiency cache_aware_balloon "$@"
