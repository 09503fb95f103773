// One PKCS#11 session: log-in, finding the private key, reading its attributes, and the two
// operations the token formats need (ECDH derive, RSA-OAEP decrypt). Owned by one lane at a time.
internal import CShims
import Synchronization

/// How RSA_v1's key unwrap runs with a token key, chosen at load by what the module does.
package enum RSAUnwrapRoute: Sendable {
    /// C_Decrypt with CKM_RSA_PKCS_OAEP (SHA-256, MGF1-SHA-256): only the 16-byte key leaves the token.
    case oaepInToken
    /// The module implements OAEP with SHA-1 only (SoftHSM2 2.6): C_Decrypt with CKM_RSA_X_509, and the
    /// modulus-sized block (which holds the key) decoded here by OpenSSL's constant-time OAEP decoder.
    case rawInTokenOAEPInProcess
}

/// A session handle, closed on deinit. Not shared between threads at the same time.
package final class PKCS11Session: @unchecked Sendable {
    // Sendable only to travel through a lock (a key's login session, a lane's session): one thread
    // at a time uses a given session, as PKCS#11 requires.
    package let module: PKCS11Module
    package let slot: UInt
    /// The module's number for the session.
    package let handle: UInt
    private var closed = false

    init(module: PKCS11Module, slot: UInt, handle: UInt) {
        self.module = module
        self.slot = slot
        self.handle = handle
    }

    deinit { if !closed { _ = CShims_P11_closeSession(module.functions, handle) } }

    /// The token reported this session gone (closed, device removed): its handle is never passed to
    /// C_CloseSession, because the module may already have given the same number to a new session.
    package func markLost() { closed = true }

    /// Nil when the module no longer knows this session (closed under us, device removed); otherwise
    /// whether this process is logged in as the user (CKS_RO_USER_FUNCTIONS or CKS_RW_USER_FUNCTIONS).
    package func loginState() -> Bool? {
        guard !closed else { return nil }
        var state: UInt = 0
        guard CShims_P11_sessionState(module.functions, handle, &state) == CShims_CKR_OK else { return nil }
        return state == 1 || state == 3
    }

    /// The attribute types the engine reads.
    package enum Attribute {
        package static let keyType = UInt(CShims_CKA_KEY_TYPE)
        package static let derive = UInt(CShims_CKA_DERIVE)
        package static let decrypt = UInt(CShims_CKA_DECRYPT)
        package static let ecParams = UInt(CShims_CKA_EC_PARAMS)
        package static let modulus = UInt(CShims_CKA_MODULUS)
    }
    /// CKK_EC and CKK_RSA.
    package static let keyTypeEC = UInt(CShims_CKK_EC)
    package static let keyTypeRSA = UInt(CShims_CKK_RSA)

    /// Logs the user in with the PIN's bytes (the caller wipes them).
    ///
    /// Already logged in (another session of this process did it: a reload) is success only for the
    /// PIN the token last accepted in this process. The module does not check the PIN then, and
    /// checking it would mean logging every session of the token out (the keys in use with them), so a
    /// different PIN is refused as CKR_PIN_INCORRECT with that said: a reload with a wrong (or changed)
    /// PIN keeps the old keys; a new PIN takes a restart.
    package func login(pin: [UInt8]) throws(PKCS11Failure) {
        let rv = pin.withUnsafeBytes { pin in
            CShims_P11_login(
                module.functions, handle,
                UnsafeMutablePointer(mutating: pin.baseAddress?.assumingMemoryBound(to: UInt8.self)), pin.count)
        }
        let token = "\(module.path)#\(slot)"
        let digest = Self.pinDigest(pin)
        if rv == CShims_CKR_USER_ALREADY_LOGGED_IN {
            let accepted = Self.acceptedPINs.withLock { $0[token] }
            guard accepted == nil || accepted == digest else {
                throw PKCS11Failure(
                    "C_Login (this process is logged in to the token with another PIN, which the token accepted; a "
                        + "changed PIN cannot be checked without logging every session out, so it is refused: restart to use it)",
                    0xA0)
            }
            return
        }
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_Login", rv) }
        Self.acceptedPINs.withLock { $0[token] = digest }
    }

    /// Per module and slot, a salted SHA-256 of the PIN the token last accepted in this process.
    private static let acceptedPINs = Mutex<[String: [UInt8]]>([:])
    /// Random for each process: the digests are not comparable with anything outside it.
    private static let pinSalt: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }()

    private static func pinDigest(_ pin: [UInt8]) -> [UInt8] {
        let context = DigestContext()
        context.start()
        context.update(pinSalt)
        context.update(pin)
        return context.finish()
    }

    /// Handles of the private keys with this label and/or id (up to 4; more than one is ambiguous).
    package func findPrivateKeys(label: [UInt8]?, id: [UInt8]?) throws(PKCS11Failure) -> [UInt] {
        var found = [UInt](repeating: 0, count: 4)
        var count: UInt = 0
        let rv = found.withUnsafeMutableBufferPointer { out in
            Self.withOptionalBytes(label) { l in
                Self.withOptionalBytes(id) { i in
                    CShims_P11_findPrivateKeys(
                        module.functions, handle, l?.baseAddress, l?.count ?? 0, i?.baseAddress, i?.count ?? 0,
                        out.baseAddress, UInt(out.count), &count)
                }
            }
        }
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_FindObjects", rv) }
        return Array(found.prefix(Int(count)))
    }

    /// The longest attribute value read: the largest the engine reads is an RSA-4096 modulus (512
    /// bytes); a module's answer is not trusted with an allocation larger than this.
    package static let maxAttributeLength: UInt = 64 << 10

    /// An attribute's value; nil when the object has no such attribute. A length over
    /// `maxAttributeLength` is refused before anything is allocated (CKR_GENERAL_ERROR, named).
    package func attribute(_ type: UInt, of object: UInt) throws(PKCS11Failure) -> [UInt8]? {
        var length: UInt = 0
        var rv = CShims_P11_attribute(module.functions, handle, object, type, nil, &length)
        if rv == CShims_CKR_ATTRIBUTE_TYPE_INVALID || length == UInt.max { return nil }
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_GetAttributeValue", rv) }
        guard length <= Self.maxAttributeLength else {
            throw PKCS11Failure(
                "C_GetAttributeValue (attribute 0x\(String(type, radix: 16)) said to be \(length) bytes long, over "
                    + "the \(Self.maxAttributeLength)-byte bound)", 0x5)
        }
        var value = [UInt8](repeating: 0, count: Int(length))
        rv = value.withUnsafeMutableBytes {
            CShims_P11_attribute(module.functions, handle, object, type, $0.baseAddress, &length)
        }
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_GetAttributeValue", rv) }
        return Array(value.prefix(Int(min(length, UInt(value.count)))))
    }

    /// A CK_BBOOL attribute (false when absent).
    package func flag(_ type: UInt, of object: UInt) throws(PKCS11Failure) -> Bool {
        try attribute(type, of: object).map { $0.first == 1 } ?? false
    }

    /// A CK_ULONG attribute.
    package func number(_ type: UInt, of object: UInt) throws(PKCS11Failure) -> UInt? {
        guard let bytes = try attribute(type, of: object), bytes.count == MemoryLayout<UInt>.size else { return nil }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt.self) }
    }

    /// ECDH (CKM_ECDH1_DERIVE, CKD_NULL) with the uncompressed point `peer` (65 bytes, already checked
    /// to be on P-256); the 32-byte shared secret goes into `out`, and the session object holding it
    /// is destroyed before returning.
    package func deriveSharedSecret(key: UInt, peer: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
        throws(PKCS11Failure)
    {
        precondition(peer.count == 65 && out.count >= 32)
        let rv = CShims_P11_ecdh(
            module.functions, handle, key, peer.baseAddress?.assumingMemoryBound(to: UInt8.self), peer.count,
            out.baseAddress?.assumingMemoryBound(to: UInt8.self))
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_DeriveKey", rv) }
    }

    /// The same with the peer point in an array (the load-time check).
    package func deriveSharedSecret(key: UInt, peer: [UInt8], into out: UnsafeMutableRawBufferPointer)
        throws(PKCS11Failure)
    {
        precondition(peer.count == 65 && out.count >= 32)
        let rv = peer.withUnsafeBufferPointer { peer in
            CShims_P11_ecdh(
                module.functions, handle, key, peer.baseAddress, peer.count,
                out.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_DeriveKey", rv) }
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256, no label) decryption of `wrapped` into `out`; the plaintext length.
    private func decryptOAEP(key: UInt, _ wrapped: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
        throws(PKCS11Failure) -> Int
    {
        try decrypt("C_Decrypt", wrapped, into: out) {
            CShims_P11_oaepDecrypt(module.functions, handle, key, $0, $1, $2, &$3)
        }
    }

    /// The raw RSA operation (CKM_RSA_X_509) on `wrapped` into `out` (the modulus' size); its length.
    private func decryptRaw(key: UInt, _ wrapped: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
        throws(PKCS11Failure) -> Int
    {
        try decrypt("C_Decrypt (CKM_RSA_X_509)", wrapped, into: out) {
            CShims_P11_rawRSADecrypt(module.functions, handle, key, $0, $1, $2, &$3)
        }
    }

    /// Samsung Pay's RSA1_5 unwrap in the token: the raw operation (CKM_RSA_X_509) into `block`, exactly
    /// the modulus' size, right-aligned (a module may drop the leading zero bytes; how many it dropped
    /// is the module's to reveal). The PKCS#1 v1.5 decoding with implicit rejection happens in this
    /// process (`RSAPKCS1Decoding`): C_Decrypt with CKM_RSA_PKCS would fail loudly on a bad padding.
    package func rawRSA(key: UInt, _ wrapped: UnsafeRawBufferPointer, into block: UnsafeMutableRawBufferPointer)
        throws(PKCS11Failure)
    {
        let length = try decryptRaw(key: key, wrapped, into: block)
        guard length <= block.count else { throw PKCS11Failure("C_Decrypt (CKM_RSA_X_509)", 0x40) }
        if length < block.count {
            let shift = block.count - length
            // Overlapping ranges: a raw pointer's copyMemory is memmove.
            (block.baseAddress! + shift).copyMemory(from: block.baseAddress!, byteCount: length)
            block.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0, count: shift)
        }
    }

    /// One C_DecryptInit + C_Decrypt (`call`, given the input, its length, the output and its room).
    private func decrypt(
        _ name: String, _ wrapped: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
        _ call: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?, inout UInt) -> UInt
    ) throws(PKCS11Failure) -> Int {
        var length = UInt(out.count)
        let rv = call(
            wrapped.baseAddress?.assumingMemoryBound(to: UInt8.self), wrapped.count,
            out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        guard rv == CShims_CKR_OK else { throw PKCS11Failure(name, rv) }
        return Int(length)
    }

    /// RSA_v1's unwrap by `route`: OAEP in the token, or the raw operation in the token and OAEP
    /// decoded here (the block, c^d mod n, is wiped). The plaintext's length.
    package func unwrapRSA(
        key: UInt, route: RSAUnwrapRoute, modulusBytes: Int, _ wrapped: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws(PKCS11Failure) -> Int {
        switch route {
        case .oaepInToken:
            return try decryptOAEP(key: key, wrapped, into: out)
        case .rawInTokenOAEPInProcess:
            let block = UnsafeMutableRawBufferPointer.allocate(byteCount: modulusBytes, alignment: 8)
            defer {
                SecureMemory.wipe(block.baseAddress!, count: modulusBytes)
                block.deallocate()
            }
            // Some modules drop the block's leading zero bytes: any length up to the modulus' is decoded
            // (its length is the module's to reveal, not a property of the key's secret).
            let length = try decryptRaw(key: key, wrapped, into: block)
            guard length <= modulusBytes,
                let message = RSAOAEPDecoding.decodeSHA256(
                    block: UnsafeRawBufferPointer(rebasing: block[0..<length]), modulusBytes: modulusBytes,
                    into: out)
            else {
                // CKR_ENCRYPTED_DATA_INVALID, as the token would say
                throw PKCS11Failure("RSA-OAEP decoding", 0x40)
            }
            return message
        }
    }

    private static func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let bytes else { return body(nil) }
        return bytes.withUnsafeBufferPointer { body($0) }
    }
}
