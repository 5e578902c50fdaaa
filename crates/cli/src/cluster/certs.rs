//! The cluster's CA and certificates (`cluster up`, `cluster certs`) and the metrics token.

use super::*;

/// `meridian cluster certs` flags.
#[derive(Args, Debug)]
pub struct CertsArgs {
    /// The directory `cluster up` used (its cluster.toml).
    #[arg(long, default_value = "meridian-cluster")]
    dir: PathBuf,
    /// A cluster file instead of `--dir`.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Issue a certificate for this identity: `node-N`, `client`, `observer` or
    /// `admin` (repeatable); it replaces the one there.
    #[arg(long = "role", value_name = "ROLE")]
    roles: Vec<String>,
    /// Issue every node's and every role's certificate.
    #[arg(long)]
    all: bool,
    /// First make a new CA (every certificate it signed before stops being trusted
    /// once the servers restart); implies --all.
    #[arg(long)]
    new_ca: bool,
    /// Days the certificates are valid.
    #[arg(long, default_value_t = meridian_net::tls::DEFAULT_DAYS)]
    days: u32,
}
/// Gives a new cluster file its security: the cluster's CA and every certificate in
/// `dir/certs` (mutual TLS), or `insecure = true`, said loudly.
pub(super) fn secure(file: &mut ClusterFile, dir: &Path, insecure: bool) -> Result<()> {
    if insecure {
        file.insecure = true;
        file.tls_dir = None;
        eprintln!(
            "WARNING: --insecure: no TLS and no authentication; anyone who can reach a port can act as any \
             node, forge commit decisions, partition the cluster and read its data"
        );
        return Ok(());
    }
    let certs = dir.join("certs");
    let servers = file.nodes.len() as u32;
    meridian_net::tls::issue_cluster(
        &certs,
        file.epoch_ns,
        servers,
        meridian_net::tls::Validity::days(meridian_net::tls::DEFAULT_DAYS),
    )
    .with_context(|| format!("cannot create the cluster's certificates in {}", certs.display()))?;
    file.tls_dir = Some(PathBuf::from("certs"));
    Ok(())
}
/// Writes a new random bearer token (32 bytes from the kernel, hex) to `path`, mode 0600.
pub(super) fn write_token(path: &Path) -> Result<()> {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let mut raw = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .context("cannot read /dev/urandom for the metrics token")?;
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(f, "{hex}").with_context(|| format!("cannot write {}", path.display()))
}
/// One line saying how the cluster's connections are secured.
pub(super) fn security_line(file: &ClusterFile, dir: &Path) -> String {
    if file.insecure {
        "security: INSECURE (plaintext, no authentication)".into()
    } else {
        format!(
            "security: mutual TLS; CA and certificates in {}/certs (the CA key ca.key issues more: meridian cluster certs)",
            dir.display()
        )
    }
}
/// `meridian cluster certs`.
pub(super) fn certs(a: &CertsArgs) -> Result<()> {
    use meridian_net::tls;
    let path = cluster_file(&a.dir, &a.cluster);
    let mut c = load(&path)?;
    if c.file.insecure {
        bail!(
            "cluster file {} says `insecure = true`: its servers run without TLS. To give it \
             certificates, stop the cluster, remove that line and run `meridian cluster certs --cluster {} --new-ca`",
            path.display(),
            path.display()
        );
    }
    if c.tls_dir().is_none() {
        if !a.new_ca {
            bail!(
                "cluster file {} names no certificates (`tls_dir`): there is no CA to issue from; \
                 `--new-ca` makes one in certs/ beside the file and names it there",
                path.display()
            );
        }
        // A file of an earlier build (neither TLS nor `insecure`): it gains a CA.
        let mut f = c.file.clone();
        f.tls_dir = Some(PathBuf::from("certs"));
        std::fs::write(&path, toml::to_string(&f)?).with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}: tls_dir = \"certs\"", path.display());
        c = load(&path)?;
    }
    let dir = c.tls_dir().expect("set above");
    let v = tls::Validity::days(a.days);
    let mut roles = vec![];
    for r in &a.roles {
        match tls::Role::parse(r) {
            Some(tls::Role::Node(n)) if n.0 >= c.num_servers() => {
                bail!("--role {r}: the cluster has server nodes 0..{}", c.num_servers() - 1)
            }
            Some(role) => roles.push(role),
            None => bail!("--role {r}: expected node-N, client, observer or admin"),
        }
    }
    if a.all || a.new_ca {
        roles = (0..c.num_servers())
            .map(|n| tls::Role::Node(NodeId(n)))
            .chain([tls::Role::Client, tls::Role::Observer, tls::Role::Admin])
            .collect();
    }
    if roles.is_empty() {
        bail!("nothing to issue: name a --role, or pass --all or --new-ca");
    }
    if a.new_ca {
        tls::issue_ca(&dir, c.id(), v).with_context(|| format!("cannot create a CA in {}", dir.display()))?;
        println!("new CA: {}", dir.join("ca.pem").display());
    }
    for r in roles {
        let f = tls::issue(&dir, c.id(), r, v).with_context(|| format!("cannot issue {r}'s certificate"))?;
        println!("{r}: {} (key {}, mode 0600)", f.cert.display(), f.key.display());
    }
    println!(
        "valid for {} days; a server reads its certificate when it starts",
        a.days
    );
    Ok(())
}
