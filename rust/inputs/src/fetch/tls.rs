//! The TLS configuration every download uses: rustls with ring, the
//! platform's verifier (the system's trust store) and, added to it, every
//! certificate in a PEM file (`SSL_CERT_FILE`).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::FetchError;

pub(crate) fn client_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, FetchError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let extra = match ca_file {
        Some(path) => read_certificates(path)?,
        None => Vec::new(),
    };
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
            .map_err(|e| FetchError::Tls(e.to_string()))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| FetchError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, FetchError> {
    let bad = |why: String| FetchError::CaFile {
        path: path.to_path_buf(),
        why,
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certificates.is_empty() {
        return Err(bad("it holds no PEM certificate".into()));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_without_certificates_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, "not a certificate\n").expect("write");
        let err = client_config(Some(&file)).expect_err("no certificate");
        assert!(err.to_string().contains("ca.pem"), "{err}");
        let err = client_config(Some(&dir.path().join("absent.pem"))).expect_err("absent");
        assert!(err.to_string().contains("absent.pem"), "{err}");
    }
}
