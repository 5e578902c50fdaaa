//! Who is on a connection: mutual TLS between every process of a cluster, and the
//! identity a certificate proves (docs/CLUSTER.md, "Security").
//!
//! Every cluster has its own certificate authority (CA). `meridian cluster up` (and
//! `cluster compose`) create it and one certificate per server node and per client
//! role in the cluster's certificate directory (the cluster file's `tls_dir`):
//!
//! | file | what |
//! |---|---|
//! | `ca.pem` | the cluster's CA certificate: every process trusts it and nothing else |
//! | `ca.key` | the CA's key: only `meridian cluster certs` needs it (keep it offline) |
//! | `node-N.pem`, `node-N.key` | server node N (DNS name `node-N.meridian`) |
//! | `client.*`, `observer.*`, `admin.*` | the three client roles |
//!
//! An identity is a DNS name in the certificate's subject alternative names: a server
//! proves it is node N with `node-N.meridian`, and a client process its role with
//! `client.meridian`, `observer.meridian` or `admin.meridian`. Names, not a parsed
//! subject, because webpki checks them for us, as it checks the chain to the CA and
//! the validity dates.
//!
//! What an identity may do on a connection it dialled (checked by the accepting
//! server, [`Grant`]):
//! - a `Hello` that names a server node must come from that node's certificate;
//! - a `Hello` that names client slots must come from a `client` or `admin` identity;
//! - `StatusReq` needs `observer`, `admin` or a server node;
//! - `ReportReq` (the committed-state dump) and `Cut` (partition, heal) need `admin`.
//!
//! Keys are written 0600, and a process refuses a key file that its group or others
//! may read (as ssh does). No key is ever logged or printed.
//!
//! Where a cluster runs without TLS (`insecure = true`, `cluster up --insecure`), a
//! connection is whoever it says it is, as before this module: for benchmarks on a
//! machine no one else can reach.

use meridian_core::NodeId;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// The DNS domain of identities (`node-3.meridian`, `admin.meridian`).
pub const DOMAIN: &str = "meridian";

/// How long certificates `cluster up` issues are valid, by default (ten years: a
/// cluster's CA is its own; rotate with `meridian cluster certs`).
pub const DEFAULT_DAYS: u32 = 3650;

/// An identity a certificate can prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Server node N.
    Node(NodeId),
    /// Runs transactions (the client library, `bench`).
    Client,
    /// Reads status and metrics.
    Observer,
    /// Everything: partition and heal, the state dump, and what the others may do.
    Admin,
}

impl Role {
    /// The file stem and name: `node-3`, `client`, `observer`, `admin`.
    pub fn name(&self) -> String {
        match self {
            Role::Node(n) => format!("node-{}", n.0),
            Role::Client => "client".into(),
            Role::Observer => "observer".into(),
            Role::Admin => "admin".into(),
        }
    }
    /// The DNS name that proves it.
    pub fn dns(&self) -> String {
        format!("{}.{DOMAIN}", self.name())
    }
    /// Parses [`Role::name`].
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "client" => Some(Role::Client),
            "observer" => Some(Role::Observer),
            "admin" => Some(Role::Admin),
            _ => s.strip_prefix("node-")?.parse().ok().map(|n| Role::Node(NodeId(n))),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Why certificates could not be made or loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read or written.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        err: std::io::Error,
    },
    /// A file holds no usable certificate or key.
    #[error("{path}: {msg}")]
    Bad {
        /// The file.
        path: String,
        /// What is wrong.
        msg: String,
    },
    /// A key file others can read.
    #[error("{path}: the file holds a secret and is readable by its group or others (mode {mode:o}); run `chmod 600 {path}`")]
    Exposed {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// Certificate generation failed.
    #[error("cannot issue a certificate: {0}")]
    Issue(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |err| TlsError::Io {
        path: path.display().to_string(),
        err,
    }
}

/// Where one identity's files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The cluster's CA certificate (the only one trusted).
    pub ca: PathBuf,
    /// The identity's certificate.
    pub cert: PathBuf,
    /// Its private key (mode 0600).
    pub key: PathBuf,
}

impl Credentials {
    /// `role`'s files in a cluster's certificate directory.
    pub fn in_dir(dir: &Path, role: Role) -> Credentials {
        Credentials {
            ca: dir.join("ca.pem"),
            cert: dir.join(format!("{}.pem", role.name())),
            key: dir.join(format!("{}.key", role.name())),
        }
    }
}

/// A certificate's validity, as issued.
#[derive(Clone, Copy, Debug)]
pub struct Validity {
    /// Seconds from now (negative: in the past) when it starts to be valid.
    pub from_secs: i64,
    /// Seconds from now when it stops being valid.
    pub until_secs: i64,
}

impl Validity {
    /// From an hour ago (clocks drift) for `days` days.
    pub fn days(days: u32) -> Validity {
        Validity {
            from_secs: -3600,
            until_secs: days as i64 * 86_400,
        }
    }
}

fn ca_params(cluster_id: u64) -> Result<rcgen::CertificateParams, TlsError> {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| TlsError::Issue(e.to_string()))?;
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    p.distinguished_name
        .push(rcgen::DnType::CommonName, format!("meridian cluster {cluster_id} CA"));
    p.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    Ok(p)
}

fn set_validity(p: &mut rcgen::CertificateParams, v: Validity) {
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now + time::Duration::seconds(v.from_secs);
    p.not_after = now + time::Duration::seconds(v.until_secs);
}

/// Writes `text` to `path` with mode `mode`, replacing it.
fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(io(path))?;
    // The umask may have narrowed the mode; never widened it, but say it exactly.
    f.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(io(path))?;
    f.write_all(text.as_bytes()).map_err(io(path))
}

/// Creates a cluster's CA in `dir` (`ca.pem`, `ca.key`), replacing any there.
pub fn issue_ca(dir: &Path, cluster_id: u64, v: Validity) -> Result<(), TlsError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let key = rcgen::KeyPair::generate().map_err(|e| TlsError::Issue(e.to_string()))?;
    let mut p = ca_params(cluster_id)?;
    set_validity(&mut p, v);
    let cert = p.self_signed(&key).map_err(|e| TlsError::Issue(e.to_string()))?;
    write_file(&dir.join("ca.key"), &key.serialize_pem(), 0o600)?;
    write_file(&dir.join("ca.pem"), &cert.pem(), 0o644)
}

/// Issues `role`'s certificate and key in `dir`, signed by the CA there (whose key
/// `ca.key` must be present), replacing any earlier ones. Returns the files.
pub fn issue(dir: &Path, cluster_id: u64, role: Role, v: Validity) -> Result<Credentials, TlsError> {
    let ca_key_path = dir.join("ca.key");
    check_private(&ca_key_path)?;
    let ca_key_pem = std::fs::read_to_string(&ca_key_path).map_err(io(&ca_key_path))?;
    let ca_key = rcgen::KeyPair::from_pem(&ca_key_pem).map_err(|e| TlsError::Bad {
        path: ca_key_path.display().to_string(),
        msg: format!("not a CA key: {e}"),
    })?;
    let issuer = rcgen::Issuer::new(ca_params(cluster_id)?, ca_key);
    let key = rcgen::KeyPair::generate().map_err(|e| TlsError::Issue(e.to_string()))?;
    let mut p = rcgen::CertificateParams::new(vec![role.dns()]).map_err(|e| TlsError::Issue(e.to_string()))?;
    p.distinguished_name.push(rcgen::DnType::CommonName, role.dns());
    p.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = match role {
        // A server both accepts connections and dials its peers.
        Role::Node(_) => vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ],
        _ => vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth],
    };
    set_validity(&mut p, v);
    let cert = p.signed_by(&key, &issuer).map_err(|e| TlsError::Issue(e.to_string()))?;
    let c = Credentials::in_dir(dir, role);
    write_file(&c.key, &key.serialize_pem(), 0o600)?;
    write_file(&c.cert, &cert.pem(), 0o644)?;
    Ok(c)
}

/// Creates everything a cluster of `servers` server nodes needs in `dir`: its CA, one
/// certificate per node, and one per client role.
pub fn issue_cluster(dir: &Path, cluster_id: u64, servers: u32, v: Validity) -> Result<(), TlsError> {
    issue_ca(dir, cluster_id, v)?;
    for n in 0..servers {
        issue(dir, cluster_id, Role::Node(NodeId(n)), v)?;
    }
    for r in [Role::Client, Role::Observer, Role::Admin] {
        issue(dir, cluster_id, r, v)?;
    }
    Ok(())
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |msg: String| TlsError::Bad {
        path: path.display().to_string(),
        msg,
    };
    let bytes = std::fs::read(path).map_err(io(path))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    Ok(certs)
}

/// Fails if a secret's file (a key, a token) is readable by its group or others.
pub fn check_private(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(io(path))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(TlsError::Exposed {
            path: path.display().to_string(),
            mode,
        });
    }
    Ok(())
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    check_private(path)?;
    let bytes = std::fs::read(path).map_err(io(path))?;
    // The error names the file, never the key's bytes.
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::Bad {
        path: path.display().to_string(),
        msg: format!("not a PEM private key: {e}"),
    })
}

/// The reading half of a connection: TCP, or TLS over TCP.
pub type Rd = Box<dyn AsyncRead + Send + Unpin>;
/// The writing half of a connection.
pub type Wr = Box<dyn AsyncWrite + Send + Unpin>;

/// Splits a plain TCP stream without a lock between the halves (TLS needs one: both
/// halves drive one session).
fn split_tcp(s: TcpStream) -> (Rd, Wr) {
    let (r, w) = s.into_split();
    (Box::new(r), Box::new(w))
}

fn split_tls<S: AsyncRead + AsyncWrite + Send + Unpin + 'static>(s: S) -> (Rd, Wr) {
    let (r, w) = tokio::io::split(s);
    (Box::new(r), Box::new(w))
}

/// How a process's connections are secured.
#[derive(Clone)]
pub enum Security {
    /// Plaintext, no authentication (`insecure = true`).
    Insecure,
    /// Mutual TLS with this identity.
    Tls(Arc<Tls>),
}

/// One identity's TLS configuration.
pub struct Tls {
    /// Who this process is.
    pub me: Role,
    connector: tokio_rustls::TlsConnector,
    /// Servers only: accepts connections (requiring a client certificate).
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    /// Servers only: HTTPS for the metrics endpoint (no client certificate: a
    /// Prometheus scraper has none of ours; a bearer token can be asked instead).
    metrics: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Security::Insecure => f.write_str("insecure"),
            Security::Tls(t) => write!(f, "tls as {}", t.me),
        }
    }
}

impl Security {
    /// Loads `me`'s credentials: a server node also accepts connections, and every
    /// process trusts only the CA in `creds.ca`.
    pub fn load(creds: &Credentials, me: Role) -> Result<Security, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in load_certs(&creds.ca)? {
            roots.add(c).map_err(|e| TlsError::Bad {
                path: creds.ca.display().to_string(),
                msg: format!("not a usable CA certificate: {e}"),
            })?;
        }
        let roots = Arc::new(roots);
        let chain = load_certs(&creds.cert)?;
        let key = load_key(&creds.key)?;
        // Our own certificate, checked as the servers will check it, so that one that
        // expired, is not valid yet or is of another CA fails here, saying which,
        // instead of as an alert from every server.
        let own = rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| TlsError::Issue(e.to_string()))?;
        own.verify_client_cert(&chain[0], &chain[1..], rustls::pki_types::UnixTime::now())
            .map_err(|e| TlsError::Bad {
                path: creds.cert.display().to_string(),
                msg: format!("{e} (checked against the CA in {})", creds.ca.display()),
            })?;
        let bad_pair = |e: rustls::Error| TlsError::Bad {
            path: creds.cert.display().to_string(),
            msg: format!("certificate and key {} do not go together: {e}", creds.key.display()),
        };
        let versions = &[&rustls::version::TLS13];
        let client = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| TlsError::Issue(e.to_string()))?
            .with_root_certificates(roots.clone())
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(bad_pair)?;
        let metrics = match me {
            Role::Node(_) => {
                let cfg = rustls::ServerConfig::builder_with_provider(provider.clone())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| TlsError::Issue(e.to_string()))?
                    .with_no_client_auth()
                    .with_single_cert(chain.clone(), key.clone_key())
                    .map_err(bad_pair)?;
                Some(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
            }
            _ => None,
        };
        let acceptor = match me {
            Role::Node(_) => {
                let server = rustls::ServerConfig::builder_with_provider(provider)
                    .with_protocol_versions(versions)
                    .map_err(|e| TlsError::Issue(e.to_string()))?
                    .with_client_cert_verifier(own.clone())
                    .with_single_cert(chain, key)
                    .map_err(bad_pair)?;
                Some(tokio_rustls::TlsAcceptor::from(Arc::new(server)))
            }
            _ => None,
        };
        Ok(Security::Tls(Arc::new(Tls {
            me,
            connector: tokio_rustls::TlsConnector::from(Arc::new(client)),
            acceptor,
            metrics,
        })))
    }

    /// A server's HTTPS acceptor for its metrics endpoint (none without TLS).
    pub fn metrics_acceptor(&self) -> Option<tokio_rustls::TlsAcceptor> {
        match self {
            Security::Insecure => None,
            Security::Tls(t) => t.metrics.clone(),
        }
    }

    /// Whether connections are plaintext.
    pub fn is_insecure(&self) -> bool {
        matches!(self, Security::Insecure)
    }

    /// Secures an outgoing connection to server `peer` (whose certificate must name it).
    pub async fn connect(&self, tcp: TcpStream, peer: NodeId) -> Result<(Rd, Wr), String> {
        match self {
            Security::Insecure => Ok(split_tcp(tcp)),
            Security::Tls(t) => {
                let name = ServerName::try_from(Role::Node(peer).dns()).map_err(|e| e.to_string())?;
                // A refusal (a certificate not trusted, an alert) is a TLS error; a peer
                // that vanished mid-handshake (killed, or dying: the connection reset
                // or closed) or never answered is a node down, and is said without
                // "TLS", so that a client reads it as unavailability, not as bad
                // credentials (a bench right after a kill -9 exited 2 with
                // "credentials: ... Connection reset by peer").
                let s = tokio::time::timeout(HANDSHAKE_TIMEOUT, t.connector.connect(name, tcp))
                    .await
                    .map_err(|_| {
                        format!(
                            "node {} did not finish its handshake within {HANDSHAKE_TIMEOUT:?}",
                            peer.0
                        )
                    })?
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => {
                            format!("TLS handshake with node {} failed: {e}", peer.0)
                        }
                        _ => format!("node {} closed the connection during its handshake: {e}", peer.0),
                    })?;
                Ok(split_tls(s))
            }
        }
    }

    /// Secures an accepted connection: the stream, and what its certificate grants.
    pub(crate) async fn accept(&self, tcp: TcpStream) -> Result<(Rd, Wr, Grant), String> {
        match self {
            Security::Insecure => {
                let (r, w) = split_tcp(tcp);
                Ok((r, w, Grant::Anyone))
            }
            Security::Tls(t) => {
                let acceptor = t.acceptor.as_ref().ok_or("this process accepts no connections")?;
                let s = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
                    .await
                    .map_err(|_| format!("no TLS handshake within {HANDSHAKE_TIMEOUT:?}"))?
                    .map_err(|e| format!("TLS handshake failed: {e}"))?;
                let cert = s
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .cloned()
                    .ok_or("no client certificate")?;
                let (r, w) = split_tls(s);
                Ok((r, w, Grant::Cert(cert)))
            }
        }
    }
}

/// How long a TLS handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What an accepted connection may do: anything (insecure), or what its verified
/// certificate names.
#[derive(Clone, Debug)]
pub enum Grant {
    /// No authentication: the cluster runs insecure.
    Anyone,
    /// The peer's verified end-entity certificate.
    Cert(CertificateDer<'static>),
}

impl Grant {
    /// Whether the certificate proves `role` (always, without TLS).
    pub fn proves(&self, role: Role) -> bool {
        match self {
            Grant::Anyone => true,
            Grant::Cert(der) => {
                let Ok(ee) = webpki::EndEntityCert::try_from(der) else {
                    return false;
                };
                let Ok(name) = ServerName::try_from(role.dns()) else {
                    return false;
                };
                ee.verify_is_valid_for_subject_name(&name).is_ok()
            }
        }
    }

    /// The first of `roles` the certificate proves, for messages.
    pub fn who(&self, roles: &[Role]) -> String {
        match self {
            Grant::Anyone => "anyone (insecure)".into(),
            Grant::Cert(_) => roles
                .iter()
                .find(|r| self.proves(**r))
                .map(|r| r.name())
                .unwrap_or_else(|| "an identity of this cluster's CA".into()),
        }
    }

    /// Whether it may ask for a server's status.
    pub fn may_observe(&self, servers: u32) -> bool {
        self.proves(Role::Observer)
            || self.proves(Role::Admin)
            || (0..servers).any(|n| self.proves(Role::Node(NodeId(n))))
    }

    /// Whether it may dump state, partition or heal.
    pub fn may_administer(&self) -> bool {
        self.proves(Role::Admin)
    }

    /// Whether it may host client slots (run transactions).
    pub fn may_run_clients(&self) -> bool {
        self.proves(Role::Client) || self.proves(Role::Admin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_through_their_names() {
        for r in [Role::Node(NodeId(12)), Role::Client, Role::Observer, Role::Admin] {
            assert_eq!(Role::parse(&r.name()), Some(r));
        }
        assert_eq!(Role::parse("node-x"), None);
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn issued_certificates_prove_their_role_and_no_other() {
        let d = tempfile::tempdir().unwrap();
        issue_cluster(d.path(), 7, 3, Validity::days(1)).unwrap();
        let der = |r: Role| load_certs(&Credentials::in_dir(d.path(), r).cert).unwrap().remove(0);
        let g = Grant::Cert(der(Role::Node(NodeId(1))));
        assert!(g.proves(Role::Node(NodeId(1))));
        assert!(!g.proves(Role::Node(NodeId(2))));
        assert!(!g.proves(Role::Admin));
        assert!(g.may_observe(3) && !g.may_administer() && !g.may_run_clients());
        let c = Grant::Cert(der(Role::Client));
        assert!(c.may_run_clients() && !c.may_observe(3) && !c.may_administer());
        let a = Grant::Cert(der(Role::Admin));
        assert!(a.may_run_clients() && a.may_observe(3) && a.may_administer());
        assert!(Security::load(
            &Credentials::in_dir(d.path(), Role::Node(NodeId(0))),
            Role::Node(NodeId(0))
        )
        .is_ok());
    }

    #[test]
    fn keys_are_written_0600_and_an_exposed_key_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        issue_cluster(d.path(), 7, 1, Validity::days(1)).unwrap();
        let c = Credentials::in_dir(d.path(), Role::Client);
        for k in [&c.key, &d.path().join("ca.key")] {
            assert_eq!(std::fs::metadata(k).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::set_permissions(&c.key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Security::load(&c, Role::Client).expect_err("refused").to_string();
        assert!(
            e.contains("readable by its group or others") && e.contains("chmod 600"),
            "{e}"
        );
        assert!(!e.contains("PRIVATE KEY"), "{e}");
    }
}
