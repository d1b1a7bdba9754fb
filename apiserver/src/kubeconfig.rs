//! `kspaces kubeconfig`: a kubeconfig with a client certificate signed by the server's CA.

use crate::config::KubeconfigArgs;
use crate::pki::{self, CertificateAuthority, PkiPaths};

pub fn print(args: &KubeconfigArgs) -> Result<(), String> {
    let paths = PkiPaths::new(&args.data_dir);
    if !paths.ca_cert.exists() {
        return Err(format!("{} has no CA yet: run `kspaces serve --data-dir {}` once first", args.data_dir.display(), args.data_dir.display()));
    }
    let ca = CertificateAuthority::load_or_create(&paths).map_err(|e| e.to_string())?;
    let server = match &args.server {
        Some(url) => url.clone(),
        None => std::fs::read_to_string(args.data_dir.join("server-url"))
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "https://127.0.0.1:6443".to_owned()),
    };
    if crate::tenancy::RESERVED_IN_CREDENTIALS.contains(&args.tenant.as_str()) {
        return Err(format!("tenant {:?} is reserved: no credential may name it (root:users holds the system users' homes; \
            \"all\" names every tenant)", args.tenant));
    }
    let mut organizations = args.groups.clone();
    organizations.push(format!("tenant:{}", args.tenant));
    let (cert, key) = ca.client_cert(&args.user, &organizations).map_err(|e| e.to_string())?;
    let cluster = if args.tenant == "system" { "kspaces".to_owned() } else { format!("kspaces-{}", args.tenant) };
    print!("{}", pki::kubeconfig(&server, &ca.cert_pem, &cluster, &args.user, &cert, &key));
    Ok(())
}
