//! Real faults on a compose cluster's containers, applied from the host: `docker kill`,
//! `start`, `pause` and `unpause`, and, inside a container's network namespace
//! (`nsenter --target PID --net`), nftables rules for cuts and a netem queueing
//! discipline for slow links. Nothing runs inside the image (it holds only the
//! `meridian` binary), and nothing touches the host's own namespace or any address
//! outside the cluster's servers.

use super::schedule::Fault;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The compose project the nemesis started, and the cluster's containers in it.
pub struct Project {
    /// The compose command (`docker-compose`, or `docker compose`).
    pub compose: Vec<String>,
    /// The project name (`-p`).
    pub name: String,
    /// compose.yml.
    pub file: PathBuf,
    /// Container id of each server, by node.
    pub ids: Vec<String>,
    /// Address of each server, by node.
    pub ips: Vec<Ipv4Addr>,
}

/// Runs a command; its output, or an error with what it printed.
pub fn run(c: &mut Command) -> Result<String> {
    use std::os::unix::process::CommandExt as _;
    // In a process group of its own: a Ctrl-C at the terminal reaches the nemesis
    // alone, which then heals and cleans up in order.
    let o = c
        .process_group(0)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {c:?}"))?;
    if !o.status.success() {
        bail!(
            "{c:?} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).to_string())
}

/// Whether this kernel can delay packets (netem; some kernels are built without it).
/// Tried in a network namespace of its own that ends with the probe.
pub fn kernel_has_netem() -> bool {
    Command::new("unshare")
        .args([
            "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
        ])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `prog ARGS` in the network namespace of process `pid`, with `input` on stdin.
fn nsenter(pid: u32, prog: &str, args: &[&str], input: &str) -> Result<()> {
    let mut c = Command::new("nsenter");
    c.args(["--target", &pid.to_string(), "--net", prog])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().with_context(|| format!("cannot run {c:?}"))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .with_context(|| format!("cannot write to {prog}"))?;
    let o = child.wait_with_output()?;
    if !o.status.success() {
        bail!(
            "{prog} {} in the namespace of pid {pid} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(())
}

impl Project {
    /// A compose command for this project.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.compose[0]);
        c.args(&self.compose[1..])
            .args(["-p", &self.name, "-f"])
            .arg(&self.file)
            .args(args);
        c
    }

    /// The host pid of node `n`'s server (0 when its container is not running).
    fn pid(&self, n: u32) -> Result<u32> {
        let out = run(Command::new("docker").args(["inspect", "-f", "{{.State.Pid}}", &self.ids[n as usize]]))?;
        out.trim()
            .parse()
            .with_context(|| format!("docker inspect gave no pid for node {n}: `{}`", out.trim()))
    }

    /// The interface that holds node `n`'s address, inside its namespace.
    fn iface(&self, n: u32, pid: u32) -> Result<String> {
        let out = run(Command::new("nsenter").args([
            "--target",
            &pid.to_string(),
            "--net",
            "ip",
            "-o",
            "-4",
            "addr",
            "show",
        ]))?;
        let ip = self.ips[n as usize].to_string();
        out.lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(3)
                    .is_some_and(|a| a.split('/').next() == Some(ip.as_str()))
            })
            .and_then(|l| l.split_whitespace().nth(1))
            .map(|i| i.split('@').next().unwrap_or(i).to_string())
            .ok_or_else(|| anyhow::anyhow!("node {n}'s container has no interface with address {ip}"))
    }

    /// Applies step `k`'s fault. Cuts and slow links are applied to the nodes given
    /// (`only`), or to every node they involve.
    pub fn apply(&self, k: usize, fault: &Fault, only: Option<u32>) -> Result<()> {
        match fault {
            Fault::Kill(n) => {
                run(Command::new("docker").args(["kill", "--signal", "KILL", &self.ids[*n as usize]]))?;
            }
            Fault::Pause(n) => {
                run(Command::new("docker").args(["pause", &self.ids[*n as usize]]))?;
            }
            Fault::Cut(links) => {
                for (n, (out, inn)) in by_node(links) {
                    if only.is_some_and(|o| o != n) {
                        continue;
                    }
                    let mut rules = format!("table inet meridian_nemesis_{k} {{\n");
                    if !out.is_empty() {
                        rules += &format!(
                            "  chain out {{ type filter hook output priority 0; policy accept; ip daddr {{ {} }} drop; }}\n",
                            self.set(&out)
                        );
                    }
                    if !inn.is_empty() {
                        rules += &format!(
                            "  chain in {{ type filter hook input priority 0; policy accept; ip saddr {{ {} }} drop; }}\n",
                            self.set(&inn)
                        );
                    }
                    rules += "}\n";
                    // A killed node gets the rules when it is started again.
                    let Some(pid) = self.running_pid(n)? else { continue };
                    nsenter(pid, "nft", &["-f", "-"], &rules).with_context(|| format!("cutting node {n}'s links"))?;
                }
            }
            Fault::Slow { links, delay, loss_pct } => {
                for (n, (out, _)) in by_node(links) {
                    if out.is_empty() || only.is_some_and(|o| o != n) {
                        continue;
                    }
                    let Some(pid) = self.running_pid(n)? else { continue };
                    if *loss_pct > 0.0 {
                        // Loss by nftables' random numbers, in parts per million.
                        let rules = format!(
                            "table inet meridian_nemesis_{k} {{\n  chain out {{ type filter hook output priority 0; policy accept; \
                             ip daddr {{ {} }} numgen random mod 1000000 < {} drop; }}\n}}\n",
                            self.set(&out),
                            (loss_pct * 10_000.0).round() as u32
                        );
                        nsenter(pid, "nft", &["-f", "-"], &rules)
                            .with_context(|| format!("adding loss to node {n}'s links"))?;
                    }
                    if !delay.is_zero() {
                        let dev = self.iface(n, pid)?;
                        // Class 1:2 of an HTB root holds the netem; everything else
                        // goes to 1:1, and only the listed destinations to 1:2.
                        let mut b = format!(
                            "qdisc add dev {dev} root handle 1: htb default 1\n\
                             class add dev {dev} parent 1: classid 1:1 htb rate 100gbit\n\
                             class add dev {dev} parent 1: classid 1:2 htb rate 100gbit\n\
                             qdisc add dev {dev} parent 1:2 handle 20: netem delay {}us\n",
                            delay.as_micros()
                        );
                        for m in &out {
                            b += &format!(
                                "filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip dst {}/32 flowid 1:2\n",
                                self.ips[*m as usize]
                            );
                        }
                        nsenter(pid, "tc", &["-batch", "-"], &b)
                            .with_context(|| format!("delaying node {n}'s links"))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Heals step `k`'s fault: starts a killed container, resumes a paused one, removes
    /// the rules of a cut or a slow link (from the containers still running the same
    /// process; a container restarted meanwhile lost them with its namespace).
    pub fn heal(&self, k: usize, fault: &Fault) -> Result<()> {
        match fault {
            Fault::Kill(n) => {
                run(Command::new("docker").args(["start", &self.ids[*n as usize]]))?;
            }
            Fault::Pause(n) => {
                run(Command::new("docker").args(["unpause", &self.ids[*n as usize]]))?;
            }
            Fault::Cut(links) => {
                // Every node, whatever one of them answers (an error is kept for the
                // end): a node the cut never reached has no table to delete.
                let mut first = None;
                for n in by_node(links).into_keys() {
                    let r = self.running_pid(n).and_then(|pid| match pid {
                        Some(pid) => nsenter(
                            pid,
                            "nft",
                            &["delete", "table", "inet", &format!("meridian_nemesis_{k}")],
                            "",
                        )
                        .with_context(|| format!("healing node {n}'s links")),
                        None => Ok(()),
                    });
                    if let Err(e) = r {
                        first.get_or_insert(e);
                    }
                }
                if let Some(e) = first {
                    return Err(e);
                }
            }
            Fault::Slow { links, delay, loss_pct } => {
                let mut first = None;
                for (n, (out, _)) in by_node(links) {
                    if out.is_empty() {
                        continue;
                    }
                    let r = self.running_pid(n).and_then(|pid| {
                        let Some(pid) = pid else { return Ok(()) };
                        if *loss_pct > 0.0 {
                            nsenter(
                                pid,
                                "nft",
                                &["delete", "table", "inet", &format!("meridian_nemesis_{k}")],
                                "",
                            )
                            .with_context(|| format!("healing node {n}'s lossy links"))?;
                        }
                        if !delay.is_zero() {
                            let dev = self.iface(n, pid)?;
                            nsenter(pid, "tc", &["qdisc", "del", "dev", &dev, "root"], "")
                                .with_context(|| format!("healing node {n}'s slow links"))?;
                        }
                        Ok(())
                    });
                    if let Err(e) = r {
                        first.get_or_insert(e);
                    }
                }
                if let Some(e) = first {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The addresses of `nodes`, as an nftables set's elements.
    fn set(&self, nodes: &[u32]) -> String {
        nodes
            .iter()
            .map(|m| self.ips[*m as usize].to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Node `n`'s pid, or `None` while its container is not running.
    fn running_pid(&self, n: u32) -> Result<Option<u32>> {
        Ok(Some(self.pid(n)?).filter(|p| *p != 0))
    }
}

/// For every node a set of directed links involves: the nodes it must not send to
/// (or sends slowly to), and the nodes it must not hear from.
fn by_node(links: &[(u32, u32)]) -> BTreeMap<u32, (Vec<u32>, Vec<u32>)> {
    let mut m: BTreeMap<u32, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
    for (a, b) in links {
        m.entry(*a).or_default().0.push(*b);
        m.entry(*b).or_default().1.push(*a);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_of_a_link_gets_its_half() {
        let m = by_node(&[(0, 2), (0, 3), (1, 2)]);
        assert_eq!(m[&0], (vec![2, 3], vec![]));
        assert_eq!(m[&2], (vec![], vec![0, 1]));
        assert_eq!(m.len(), 4);
    }
}
