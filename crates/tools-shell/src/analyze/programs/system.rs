//! Programs that reach the network or change the system: high risk, or medium for lookups.

use tool_core::Risk;

use super::super::Reach;
use super::super::walk::Walker;
use super::super::words::Word;
use super::Class;

/// Programs that reach the network.
const NETWORK: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "rsync",
    "rclone", "ftp", "aria2c", "lynx", "w3m", "links", "openssl", "npx", "httpie", "http", "xh",
];

/// Programs that look things up on the network without changing anything: medium.
const NETWORK_LOOKUPS: &[&str] = &[
    "ping",
    "ping6",
    "traceroute",
    "tracepath",
    "dig",
    "nslookup",
    "host",
    "whois",
    "mtr",
];

/// Programs that change the system, gain privileges, kill processes or destroy data: high, with
/// what they reach inside the sandbox.
const DANGEROUS: &[(&str, Reach)] = &[
    ("su", Reach::OutsideWrites),
    ("pkexec", Reach::OutsideWrites),
    ("chroot", Reach::OutsideWrites),
    ("dd", Reach::Destructive),
    ("mount", Reach::OutsideWrites),
    ("umount", Reach::OutsideWrites),
    ("fdisk", Reach::OutsideWrites),
    ("sfdisk", Reach::OutsideWrites),
    ("parted", Reach::OutsideWrites),
    ("mkswap", Reach::OutsideWrites),
    ("swapon", Reach::OutsideWrites),
    ("swapoff", Reach::OutsideWrites),
    ("losetup", Reach::OutsideWrites),
    ("kill", Reach::OutsideWrites),
    ("killall", Reach::OutsideWrites),
    ("pkill", Reach::OutsideWrites),
    ("shutdown", Reach::OutsideWrites),
    ("reboot", Reach::OutsideWrites),
    ("halt", Reach::OutsideWrites),
    ("poweroff", Reach::OutsideWrites),
    ("systemctl", Reach::OutsideWrites),
    ("service", Reach::OutsideWrites),
    ("init", Reach::OutsideWrites),
    ("telinit", Reach::OutsideWrites),
    ("iptables", Reach::OutsideWrites),
    ("ip6tables", Reach::OutsideWrites),
    ("nft", Reach::OutsideWrites),
    ("ip", Reach::OutsideWrites),
    ("ifconfig", Reach::OutsideWrites),
    ("route", Reach::OutsideWrites),
    ("crontab", Reach::OutsideWrites),
    ("at", Reach::OutsideWrites),
    ("batch", Reach::OutsideWrites),
    ("useradd", Reach::OutsideWrites),
    ("userdel", Reach::OutsideWrites),
    ("usermod", Reach::OutsideWrites),
    ("passwd", Reach::OutsideWrites),
    ("chpasswd", Reach::OutsideWrites),
    ("groupadd", Reach::OutsideWrites),
    ("visudo", Reach::OutsideWrites),
    ("apt", Reach::OutsideWrites),
    ("apt-get", Reach::OutsideWrites),
    ("aptitude", Reach::OutsideWrites),
    ("dpkg", Reach::OutsideWrites),
    ("yum", Reach::OutsideWrites),
    ("dnf", Reach::OutsideWrites),
    ("rpm", Reach::OutsideWrites),
    ("pacman", Reach::OutsideWrites),
    ("apk", Reach::OutsideWrites),
    ("snap", Reach::OutsideWrites),
    ("flatpak", Reach::OutsideWrites),
    ("brew", Reach::OutsideWrites),
    ("docker", Reach::OutsideWrites),
    ("podman", Reach::OutsideWrites),
    ("kubectl", Reach::OutsideWrites),
    ("nsenter", Reach::OutsideWrites),
    ("unshare", Reach::OutsideWrites),
    ("setcap", Reach::OutsideWrites),
    ("insmod", Reach::OutsideWrites),
    ("rmmod", Reach::OutsideWrites),
    ("modprobe", Reach::OutsideWrites),
    ("sysctl", Reach::OutsideWrites),
    ("shred", Reach::Destructive),
    ("wipe", Reach::Destructive),
    ("strace", Reach::Unknown),
    ("ltrace", Reach::Unknown),
    ("gdb", Reach::Unknown),
    ("watch", Reach::Unknown),
    ("parallel", Reach::Unknown),
    ("script", Reach::Unknown),
    ("expect", Reach::Unknown),
    ("busybox", Reach::Unknown),
    ("systemd-run", Reach::OutsideWrites),
    ("firejail", Reach::Unknown),
    ("bwrap", Reach::Unknown),
    ("xdg-open", Reach::OutsideWrites),
];

impl Walker {
    /// Network and system programs; `None` when `key` is neither.
    pub(crate) fn system(&mut self, name: &str, key: &str, args: &[Word]) -> Option<Class> {
        if NETWORK.contains(&key) {
            // Network clients start programs of their own (`ssh -o ProxyCommand`, `rsync -e`,
            // `scp -S`, `npx`, `openssl -engine`, `wget --use-askpass`, `aria2c
            // --on-download-complete`), so a rule on commands cannot see past them.
            return Some(
                Class::new(Risk::High, Reach::Network, "reaches the network")
                    .net()
                    .opaque(),
            );
        }
        if NETWORK_LOOKUPS.contains(&key) {
            return Some(Class::new(Risk::Medium, Reach::Network, "sends network queries").net());
        }
        let reach = DANGEROUS
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| *r)
            .or(key.starts_with("mkfs").then_some(Reach::OutsideWrites))?;
        if matches!(key, "su" | "nsenter" | "chroot" | "unshare") {
            // Still look at what runs, so the deny list sees it (the class stays high).
            let start = args
                .iter()
                .position(|a| !a.display().starts_with('-'))
                .map(|p| p + usize::from(key == "chroot"))
                .unwrap_or(args.len());
            if key == "su" {
                if let Some(i) = args.iter().position(|a| a.is("-c") || a.is("--command"))
                    && let Some(cmd) = args.get(i + 1)
                {
                    let _ = self.wrapped(&[Word::fixed("sh"), Word::fixed("-c"), cmd.clone()]);
                }
            } else {
                let _ = self.wrapped(args.get(start..).unwrap_or(&[]));
            }
        }
        // What these run, or how, is not all visible to the analysis (`unshare -S 0 tar` takes
        // an option's value where the walk above looks for the program), so a rule on
        // commands cannot be checked past them.
        Some(
            Class::new(
                Risk::High,
                reach,
                format!("`{name}` changes the system, gains privileges, or destroys data"),
            )
            .opaque(),
        )
    }
}
