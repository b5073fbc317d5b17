"""The end-to-end burst: plain kube-scheduler, Muster, native gang scheduling and Kueue
on fresh local control planes, side by side (`make bench`)."""
