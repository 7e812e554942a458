"""Node proxy: nftables / iptables / userspace Service dataplanes. Built in the proxy issue."""
