// A new private key file: created exclusively with mode 0600, the key written by OpenSSL straight to
// the descriptor as unencrypted PKCS#8 PEM, so no copy of it is ever in Swift memory.
internal import CShims

#if canImport(Glibc)
    import Glibc
#endif

package enum PrivateKeyFile {
    /// Creates `path` (O_CREAT | O_EXCL | O_NOFOLLOW: never an existing file or a link; mode 0600 whatever
    /// the umask) and writes `key` into it. On failure nothing is left at `path`.
    package static func create(at path: String, key: EVPKey) throws(OpenSSLFailure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw OpenSSLFailure("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var written = fchmod(fd, 0o600) == 0
        if written {
            written =
                key.exportingCopy { copy -> Bool? in
                    guard let bio = BIO_new_fd(fd, BIO_NOCLOSE) else { return false }
                    defer { BIO_free(bio) }
                    return PEM_write_bio_PrivateKey(bio, copy, nil, nil, 0, nil, nil) == 1
                        && BIO_ctrl(bio, BIO_CTRL_FLUSH, 0, nil) == 1
                } ?? false
        }
        written = fsync(fd) == 0 && written
        close(fd)
        guard written else {
            unlink(path)
            throw OpenSSLFailure("cannot write the private key to \(path)")
        }
    }
}

extension EVPKey {
    /// A P-256 public key's point, uncompressed (0x04 ‖ X ‖ Y, 65 bytes); nil for other keys.
    package var uncompressedP256Point: [UInt8]? {
        guard kind == .ec, curveName == "prime256v1", let spki = subjectPublicKeyInfoDER(), spki.count == 91,
            spki[26] == 0x04
        else { return nil }
        // SubjectPublicKeyInfo of a named-curve P-256 key: 26 bytes of header, then the BIT STRING's point.
        return Array(spki[26...])
    }
}
