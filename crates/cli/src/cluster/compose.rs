//! `meridian cluster compose`: one container per node on a private Docker network.

use super::*;

/// `meridian cluster compose` flags.
#[derive(Args, Debug)]
pub struct ComposeArgs {
    /// Protocol spec (see `meridian sim --help`).
    #[arg(long, value_parser = crate::names::PROTOCOLS, hide_possible_values = true)]
    protocol: String,
    /// Topology preset or TOML file (a file is copied into DIR).
    #[arg(long, default_value = "us3")]
    topology: String,
    /// Directory for cluster.toml, compose.yml, and (mounted at /cluster in every
    /// container) the journals and restart markers.
    #[arg(long, default_value = "meridian-compose")]
    dir: PathBuf,
    /// The image to run (built by scripts/docker-image.sh).
    #[arg(long, default_value = "meridian:latest")]
    image: String,
    /// The private network, an IPv4 /24 (node i gets address .(10+i), port 7400).
    #[arg(long, default_value = "10.213.7.0/24")]
    subnet: String,
    /// Deliver messages between DCs without the topology's delay.
    #[arg(long)]
    no_delay: bool,
    /// Keep no journals (by default every server journals its inputs under
    /// `DIR/data/n<ID>`, so a container that is restarted or re-created recovers).
    #[arg(long)]
    memory_only: bool,
    /// Home DC of every shard (default: shard s in DC s mod #DCs).
    #[arg(long)]
    data_dc: Option<String>,
    /// Publish node i's Prometheus metrics on the host at 127.0.0.1:(P+i) (every
    /// container serves them on port 9400 of its own address in any case).
    #[arg(long)]
    metrics_base_port: Option<u16>,
    /// Client slots the cluster reserves (client processes' nodes; slot i lives in DC
    /// i mod #DCs): how many clients may run at once over all processes, at most
    /// 1024.
    #[arg(long, default_value_t = 256)]
    client_slots: u32,
    /// No TLS, no authentication (see `cluster up --insecure`).
    #[arg(long)]
    insecure: bool,
}
/// The first host number of the servers on a compose network, and the first one that
/// Docker may hand out to other containers (the tools container): servers take
/// .10 up to .127, Docker's dynamic addresses .128 up.
const COMPOSE_FIRST_HOST: u32 = 10;
const COMPOSE_DYNAMIC_FROM: u32 = 128;
/// Parses `a.b.c.0/24` into its first three octets.
fn parse_subnet24(s: &str) -> Result<[u8; 3]> {
    let bad = || anyhow::anyhow!("bad --subnet `{s}`: want an IPv4 /24 network such as 10.213.7.0/24");
    let (net, len) = s.split_once('/').ok_or_else(bad)?;
    let ip: std::net::Ipv4Addr = net.parse().map_err(|_| bad())?;
    let o = ip.octets();
    if len != "24" || o[3] != 0 {
        return Err(bad());
    }
    Ok([o[0], o[1], o[2]])
}
/// `meridian cluster compose`: a cluster file whose servers sit at fixed addresses of a
/// private Docker network, and a compose file that runs one container per server
/// (image from `scripts/docker-image.sh`) plus a `meridian` tools service for
/// `bench`, `cluster status` and `check` inside that network. The directory is mounted
/// at /cluster in every container, so journals, restart markers and histories stay on
/// the host across `docker-compose down` and `up`.
pub(super) fn compose(a: &ComposeArgs) -> Result<()> {
    let net = parse_subnet24(&a.subnet)?;
    let topology = Topology::load(&a.topology)?;
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let dir = std::fs::canonicalize(&a.dir)?;
    let path = dir.join("cluster.toml");
    if path.exists() {
        bail!(
            "{} already exists: a compose cluster lives there (its journals too); remove the directory or pick another --dir",
            path.display()
        );
    }
    let topo_spec = if Topology::preset(&a.topology).is_some() {
        a.topology.clone()
    } else {
        std::fs::copy(&a.topology, dir.join("topology.toml"))
            .with_context(|| format!("cannot copy {} into {}", a.topology, dir.display()))?;
        "topology.toml".to_string()
    };
    let mut file: ClusterFile = Cluster::local(&a.protocol, &topology, &topo_spec, 7400);
    file.client_slots = a.client_slots;
    let servers = file.nodes.len() as u32;
    if COMPOSE_FIRST_HOST + servers > COMPOSE_DYNAMIC_FROM {
        bail!(
            "{} servers do not fit on one compose network (at most {})",
            servers,
            COMPOSE_DYNAMIC_FROM - COMPOSE_FIRST_HOST
        );
    }
    let ip = |i: u32| format!("{}.{}.{}.{}", net[0], net[1], net[2], COMPOSE_FIRST_HOST + i);
    for n in &mut file.nodes {
        n.addr = format!("{}:7400", ip(n.id));
    }
    file.delay = !a.no_delay;
    file.data_dc = a.data_dc.clone();
    if !a.memory_only {
        file.data_dir = Some(PathBuf::from("data"));
    }
    let cluster = Cluster::validate(file.clone(), &path)?;
    check_protocol(&cluster)?;
    secure(&mut file, &dir, a.insecure)?;
    // Files the containers write in the mounted directory belong to its owner.
    let user = {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&dir)?;
        format!("{}:{}", m.uid(), m.gid())
    };
    // Each server container sees only what it needs: the cluster file, the journals and
    // restart markers, and (with TLS) the CA certificate and its own certificate and
    // key, not every key of the cluster (DIR/node-certs/n<ID>, mounted at certs/).
    for sub in ["run", "data"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("cannot create {}/{sub}", dir.display()))?;
    }
    if !a.insecure {
        for n in 0..servers {
            let to = dir.join("node-certs").join(format!("n{n}"));
            std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
            let role = meridian_net::tls::Role::Node(NodeId(n)).name();
            for f in ["ca.pem".to_string(), format!("{role}.pem"), format!("{role}.key")] {
                std::fs::copy(dir.join("certs").join(&f), to.join(&f))
                    .with_context(|| format!("cannot copy {f} into {}", to.display()))?;
            }
        }
    }
    let yml = compose_file(&cluster, a, &user, net, topo_spec == "topology.toml");
    std::fs::write(&path, toml::to_string(&file)?).with_context(|| format!("cannot write {}", path.display()))?;
    let ypath = dir.join("compose.yml");
    std::fs::write(&ypath, yml).with_context(|| format!("cannot write {}", ypath.display()))?;
    let f = ypath.display();
    println!(
        "cluster compose: {} on {} ({} servers at {}..{}, WAN delay {}{})\n\
         cluster file: {}\ncompose file: {f}\n{}\n\
         start:  docker-compose -f {f} up -d\n\
         wait:   docker-compose -f {f} run --rm meridian cluster status --cluster cluster.toml --wait 60s\n\
         bench:  docker-compose -f {f} run --rm meridian bench --cluster cluster.toml --workload ycsb --duration 10s --history h.jsonl\n\
         stop:   docker-compose -f {f} down",
        cluster.file.protocol,
        cluster.topology.name,
        servers,
        ip(0),
        ip(servers - 1),
        if file.delay { "on" } else { "off" },
        if a.memory_only { "" } else { ", journals in data/" },
        path.display(),
        security_line(&file, &dir),
    );
    Ok(())
}
/// The text of `compose.yml` (Compose file format as docker-compose 1.27+ and
/// `docker compose` read it).
fn compose_file(c: &Cluster, a: &ComposeArgs, user: &str, net: [u8; 3], topology_file: bool) -> String {
    let ip = |i: u32| format!("{}.{}.{}.{}", net[0], net[1], net[2], COMPOSE_FIRST_HOST + i);
    let npd = c.topology.nodes_per_dc;
    let mut y = format!(
        "# Written by `meridian cluster compose --protocol {} --topology {}`.\n\
         # One container per server of cluster.toml. A server's container mounts, under\n\
         # /cluster, the cluster file, data/ (journals), run/ (restart markers) and, read-only\n\
         # as certs/, node-certs/n<ID> (the CA certificate and its own key only); the tools\n\
         # container `meridian` mounts this whole directory.\n\
         #   docker-compose -f compose.yml up -d\n\
         #   docker-compose -f compose.yml run --rm meridian cluster status --cluster cluster.toml --wait 60s\n\
         #   docker-compose -f compose.yml run --rm meridian bench --cluster cluster.toml --workload ycsb --duration 10s --history h.jsonl\n\
         #   docker-compose -f compose.yml run --rm meridian check h.jsonl\n\
         #   docker-compose -f compose.yml down\n\
         services:\n",
        c.file.protocol, a.topology
    );
    for i in 0..c.num_servers() {
        let dc = &c.topology.dcs[(i / npd) as usize];
        y += &format!(
            "  n{i}:\n\
             \x20   # DC {dc}\n\
             \x20   image: {image}\n\
             \x20   command: [\"server\", \"--cluster\", \"/cluster/cluster.toml\", \"--node\", \"{i}\", \"--metrics\", \"0.0.0.0:9400\"]\n\
             \x20   user: \"{user}\"\n\
             \x20   init: true\n\
             \x20   restart: unless-stopped\n\
             \x20   stop_grace_period: 5s\n\
             \x20   volumes: [{volumes}]\n\
             \x20   networks:\n\
             \x20     wan:\n\
             \x20       ipv4_address: {addr}\n",
            image = a.image,
            addr = ip(i),
            volumes = {
                let mut v = vec![
                    "\"./cluster.toml:/cluster/cluster.toml:ro\"".to_string(),
                    "\"./run:/cluster/run\"".into(),
                    "\"./data:/cluster/data\"".into(),
                ];
                if topology_file {
                    v.push("\"./topology.toml:/cluster/topology.toml:ro\"".into());
                }
                if !a.insecure {
                    v.push(format!("\"./node-certs/n{i}:/cluster/certs:ro\""));
                }
                v.join(", ")
            },
        );
        if let Some(p) = a.metrics_base_port {
            y += &format!("    ports: [\"127.0.0.1:{}:9400\"]\n", p as u32 + i);
        }
    }
    y += &format!(
        "  meridian:\n\
         \x20   # The CLI inside the network: docker-compose run --rm meridian ARGS\n\
         \x20   image: {image}\n\
         \x20   profiles: [\"tools\"]\n\
         \x20   user: \"{user}\"\n\
         \x20   init: true\n\
         \x20   working_dir: /cluster\n\
         \x20   volumes: [\"./:/cluster\"]\n\
         \x20   networks: [wan]\n\
         networks:\n\
         \x20 wan:\n\
         \x20   ipam:\n\
         \x20     config:\n\
         \x20       - subnet: {subnet}\n\
         \x20         ip_range: {a0}.{a1}.{a2}.{COMPOSE_DYNAMIC_FROM}/25\n",
        image = a.image,
        subnet = a.subnet,
        a0 = net[0],
        a1 = net[1],
        a2 = net[2],
    );
    y
}
