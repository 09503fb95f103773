// One attribute of a certificate's subject, by dotted OID (a merchant certificate's UID is its merchant id).
internal import CShims

extension X509Certificate {
    /// The first subject entry with this dotted OID as UTF-8 text ("0.9.2342.19200300.100.1.1": UID).
    package func subjectEntry(oid: String) -> String? {
        guard let object = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(object) }
        let name = X509_get_subject_name(ref)
        let index = X509_NAME_get_index_by_OBJ(name, object, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&out, data)
        guard length >= 0, let out else { return nil }
        defer { CShims_OPENSSL_free(out) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }
}
