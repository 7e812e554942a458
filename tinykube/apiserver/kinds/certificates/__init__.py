"""The API group certificates.k8s.io: CertificateSigningRequests."""
