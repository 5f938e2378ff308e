"""Real sacct output saved from the dev cluster, for the tests that read a job's accounting."""

# Real `sacct -D -P` rows (dev cluster, Slurm 22.05.8, trainbot's fields): 1839 was submitted
# with --begin=now+1hour and cancelled while it waited; 1840 was cancelled 3 s into its run.
CANCELLED_PENDING_AND_RUNNING = """\
JobIDRaw|JobID|State|ExitCode|Reason|User|Account|Partition|QOS|ElapsedRaw|NodeList|NNodes|\
MaxRSS|ReqTRES|AllocTRES|AllocCPUS|Submit|Start|End|TimelimitRaw|WorkDir|JobName
1839|1839|CANCELLED by 0|0:0|BeginTime|root|root|debug|normal|0|None assigned|1||\
billing=1,cpu=1,mem=256M,node=1||1|2026-12-04T22:23:57|2026-12-04T22:23:58|2026-12-04T22:23:58|\
Partition_Limit|/tmp|wrap
1840|1840|CANCELLED by 0|0:0|None|root|root|debug|normal|3|vm|1||billing=1,cpu=1,mem=256M,\
node=1|billing=1,cpu=1,mem=256M,node=1|1|2026-12-04T22:23:58|2026-12-04T22:23:59|\
2026-12-04T22:24:02|UNLIMITED|/tmp|wrap
1840.batch|1840.batch|CANCELLED|0:15|||root|||4|vm|1|3228K||cpu=1,mem=256M,node=1|1|\
2026-12-04T22:23:59|2026-12-04T22:23:59|2026-12-04T22:24:03|||batch
"""
