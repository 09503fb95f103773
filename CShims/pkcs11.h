/* The few PKCS#11 (v2.40) declarations the engine's HSM path needs, written from the specification
 * (OASIS PKCS#11 Base Specification v2.40, section 5 and the function list order of pkcs11f.h), so no
 * header package is needed; and static inline helpers that hold the templates and mechanism
 * parameters on their own stack frame for exactly the duration of the call. Linux layout: CK_ULONG is
 * unsigned long, structures are not packed. */
#ifndef CSHIMS_PKCS11_H
#define CSHIMS_PKCS11_H

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef unsigned long CK_ULONG;
typedef unsigned char CK_BYTE;
typedef CK_BYTE CK_BBOOL;
typedef CK_ULONG CK_RV;
typedef CK_ULONG CK_SLOT_ID;
typedef CK_ULONG CK_SESSION_HANDLE;
typedef CK_ULONG CK_OBJECT_HANDLE;
typedef CK_ULONG CK_FLAGS;
typedef CK_ULONG CK_ATTRIBUTE_TYPE;
typedef CK_ULONG CK_MECHANISM_TYPE;

typedef struct { CK_BYTE major, minor; } CK_VERSION;
typedef struct { CK_ATTRIBUTE_TYPE type; void *pValue; CK_ULONG ulValueLen; } CK_ATTRIBUTE;
typedef struct { CK_MECHANISM_TYPE mechanism; void *pParameter; CK_ULONG ulParameterLen; } CK_MECHANISM;
typedef struct { CK_ULONG kdf; CK_ULONG ulSharedDataLen; CK_BYTE *pSharedData; CK_ULONG ulPublicDataLen; CK_BYTE *pPublicData; } CK_ECDH1_DERIVE_PARAMS;
typedef struct { CK_MECHANISM_TYPE hashAlg; CK_ULONG mgf; CK_ULONG source; void *pSourceData; CK_ULONG ulSourceDataLen; } CK_RSA_PKCS_OAEP_PARAMS;
typedef struct { void *CreateMutex, *DestroyMutex, *LockMutex, *UnlockMutex; CK_FLAGS flags; void *pReserved; } CK_C_INITIALIZE_ARGS;
typedef struct {
    CK_BYTE label[32], manufacturerID[32], model[16], serialNumber[16];
    CK_FLAGS flags;
    CK_ULONG ulMaxSessionCount, ulSessionCount, ulMaxRwSessionCount, ulRwSessionCount, ulMaxPinLen, ulMinPinLen;
    CK_ULONG ulTotalPublicMemory, ulFreePublicMemory, ulTotalPrivateMemory, ulFreePrivateMemory;
    CK_VERSION hardwareVersion, firmwareVersion;
    CK_BYTE utcTime[16];
} CK_TOKEN_INFO;
typedef struct { CK_SLOT_ID slotID; CK_ULONG state; CK_FLAGS flags; CK_ULONG ulDeviceError; } CK_SESSION_INFO;

#define CShims_CKR_OK 0x0UL
#define CShims_CKR_CRYPTOKI_ALREADY_INITIALIZED 0x191UL
#define CShims_CKR_USER_ALREADY_LOGGED_IN 0x100UL
#define CShims_CKR_BUFFER_TOO_SMALL 0x150UL
#define CShims_CKR_ATTRIBUTE_TYPE_INVALID 0x12UL
#define CShims_CKF_OS_LOCKING_OK 0x2UL
#define CShims_CKF_SERIAL_SESSION 0x4UL
#define CShims_CKU_USER 1UL
#define CShims_CKA_CLASS 0x0UL
#define CShims_CKA_TOKEN 0x1UL
#define CShims_CKA_LABEL 0x3UL
#define CShims_CKA_VALUE 0x11UL
#define CShims_CKA_KEY_TYPE 0x100UL
#define CShims_CKA_ID 0x102UL
#define CShims_CKA_SENSITIVE 0x103UL
#define CShims_CKA_DECRYPT 0x105UL
#define CShims_CKA_DERIVE 0x10CUL
#define CShims_CKA_MODULUS 0x120UL
#define CShims_CKA_VALUE_LEN 0x161UL
#define CShims_CKA_EXTRACTABLE 0x162UL
#define CShims_CKA_EC_PARAMS 0x180UL
#define CShims_CKO_PRIVATE_KEY 0x3UL
#define CShims_CKO_SECRET_KEY 0x4UL
#define CShims_CKK_RSA 0x0UL
#define CShims_CKK_EC 0x3UL
#define CShims_CKK_GENERIC_SECRET 0x10UL
#define CShims_CKM_RSA_PKCS_OAEP 0x9UL
#define CShims_CKM_RSA_X_509 0x3UL
#define CShims_CKM_SHA256 0x250UL
#define CShims_CKM_ECDH1_DERIVE 0x1050UL
#define CShims_CKG_MGF1_SHA256 0x2UL
#define CShims_CKZ_DATA_SPECIFIED 0x1UL
#define CShims_CKD_NULL 0x1UL

typedef CK_RV (*CShims_CK_GETFUNCTIONLIST)(void **);

/* CK_FUNCTION_LIST in the specification's order; entries the engine never calls are plain pointers. */
typedef struct {
    CK_VERSION version;
    CK_RV (*C_Initialize)(void *);
    void *C_Finalize, *C_GetInfo, *C_GetFunctionList;
    CK_RV (*C_GetSlotList)(CK_BBOOL, CK_SLOT_ID *, CK_ULONG *);
    void *C_GetSlotInfo;
    CK_RV (*C_GetTokenInfo)(CK_SLOT_ID, CK_TOKEN_INFO *);
    void *C_GetMechanismList, *C_GetMechanismInfo, *C_InitToken, *C_InitPIN, *C_SetPIN;
    CK_RV (*C_OpenSession)(CK_SLOT_ID, CK_FLAGS, void *, void *, CK_SESSION_HANDLE *);
    CK_RV (*C_CloseSession)(CK_SESSION_HANDLE);
    CK_RV (*C_CloseAllSessions)(CK_SLOT_ID);
    CK_RV (*C_GetSessionInfo)(CK_SESSION_HANDLE, CK_SESSION_INFO *);
    void *C_GetOperationState, *C_SetOperationState;
    CK_RV (*C_Login)(CK_SESSION_HANDLE, CK_ULONG, CK_BYTE *, CK_ULONG);
    void *C_Logout, *C_CreateObject, *C_CopyObject;
    CK_RV (*C_DestroyObject)(CK_SESSION_HANDLE, CK_OBJECT_HANDLE);
    void *C_GetObjectSize;
    CK_RV (*C_GetAttributeValue)(CK_SESSION_HANDLE, CK_OBJECT_HANDLE, CK_ATTRIBUTE *, CK_ULONG);
    void *C_SetAttributeValue;
    CK_RV (*C_FindObjectsInit)(CK_SESSION_HANDLE, CK_ATTRIBUTE *, CK_ULONG);
    CK_RV (*C_FindObjects)(CK_SESSION_HANDLE, CK_OBJECT_HANDLE *, CK_ULONG, CK_ULONG *);
    CK_RV (*C_FindObjectsFinal)(CK_SESSION_HANDLE);
    void *C_EncryptInit, *C_Encrypt, *C_EncryptUpdate, *C_EncryptFinal;
    CK_RV (*C_DecryptInit)(CK_SESSION_HANDLE, CK_MECHANISM *, CK_OBJECT_HANDLE);
    CK_RV (*C_Decrypt)(CK_SESSION_HANDLE, CK_BYTE *, CK_ULONG, CK_BYTE *, CK_ULONG *);
    void *C_DecryptUpdate, *C_DecryptFinal;
    void *C_DigestInit, *C_Digest, *C_DigestUpdate, *C_DigestKey, *C_DigestFinal;
    void *C_SignInit, *C_Sign, *C_SignUpdate, *C_SignFinal, *C_SignRecoverInit, *C_SignRecover;
    void *C_VerifyInit, *C_Verify, *C_VerifyUpdate, *C_VerifyFinal, *C_VerifyRecoverInit, *C_VerifyRecover;
    void *C_DigestEncryptUpdate, *C_DecryptDigestUpdate, *C_SignEncryptUpdate, *C_DecryptVerifyUpdate;
    void *C_GenerateKey, *C_GenerateKeyPair, *C_WrapKey, *C_UnwrapKey;
    CK_RV (*C_DeriveKey)(CK_SESSION_HANDLE, CK_MECHANISM *, CK_OBJECT_HANDLE, CK_ATTRIBUTE *, CK_ULONG, CK_OBJECT_HANDLE *);
    void *C_SeedRandom, *C_GenerateRandom, *C_GetFunctionStatus, *C_CancelFunction, *C_WaitForSlotEvent;
} CShims_CK_FUNCTION_LIST;

/* dlopen (RTLD_NOW: unresolved symbols fail here, not in the middle of a token) and C_GetFunctionList.
 * The handle is never closed: modules keep threads and state that outlive any finalisation. */
static inline const CShims_CK_FUNCTION_LIST *CShims_P11_load(const char *path, const char **error) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) { *error = dlerror(); return NULL; }
    CShims_CK_GETFUNCTIONLIST get = (CShims_CK_GETFUNCTIONLIST)dlsym(handle, "C_GetFunctionList");
    void *list = NULL;
    if (get == NULL || get(&list) != CShims_CKR_OK || list == NULL) { *error = "the module has no usable C_GetFunctionList"; return NULL; }
    return (const CShims_CK_FUNCTION_LIST *)list;
}

/* C_Initialize with the operating system's locking: sessions are used from several threads. */
static inline CK_RV CShims_P11_initialize(const CShims_CK_FUNCTION_LIST *f) {
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CShims_CKF_OS_LOCKING_OK;
    CK_RV rv = f->C_Initialize(&args);
    return rv == CShims_CKR_CRYPTOKI_ALREADY_INITIALIZED ? CShims_CKR_OK : rv;
}

static inline CK_RV CShims_P11_slots(const CShims_CK_FUNCTION_LIST *f, CK_SLOT_ID *slots, CK_ULONG *count) {
    return f->C_GetSlotList(1, slots, count);
}

static inline CK_RV CShims_P11_tokenInfo(const CShims_CK_FUNCTION_LIST *f, CK_SLOT_ID slot, CK_TOKEN_INFO *info) {
    return f->C_GetTokenInfo(slot, info);
}

/* A read-only session: the engine creates only session objects (the derived secret), never token objects. */
static inline CK_RV CShims_P11_openSession(const CShims_CK_FUNCTION_LIST *f, CK_SLOT_ID slot, CK_SESSION_HANDLE *session) {
    return f->C_OpenSession(slot, CShims_CKF_SERIAL_SESSION, NULL, NULL, session);
}

static inline CK_RV CShims_P11_closeSession(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session) {
    return f->C_CloseSession(session);
}

/* Every session of this application on the slot (tests close them under the engine to check recovery). */
static inline CK_RV CShims_P11_closeAllSessions(const CShims_CK_FUNCTION_LIST *f, CK_SLOT_ID slot) {
    return f->C_CloseAllSessions(slot);
}

/* The session's state (CKS_*), or the error that says it is gone (CKR_SESSION_HANDLE_INVALID, ...). */
static inline CK_RV CShims_P11_sessionState(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session, CK_ULONG *state) {
    CK_SESSION_INFO info;
    CK_RV rv = f->C_GetSessionInfo(session, &info);
    if (rv == CShims_CKR_OK) *state = info.state;
    return rv;
}

/* Logging in is per application and token: CKR_USER_ALREADY_LOGGED_IN (another session did it) is
 * returned as it is, for the caller to judge (the PIN was then not checked). */
static inline CK_RV CShims_P11_login(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session, unsigned char *pin, size_t length) {
    return f->C_Login(session, CShims_CKU_USER, pin, length);
}

/* Private keys with the given CKA_LABEL and/or CKA_ID (NULL: not a criterion); up to `max` handles. */
static inline CK_RV CShims_P11_findPrivateKeys(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session,
                                               const unsigned char *label, size_t labelLength,
                                               const unsigned char *id, size_t idLength,
                                               CK_OBJECT_HANDLE *found, CK_ULONG max, CK_ULONG *count) {
    CK_ULONG keyClass = CShims_CKO_PRIVATE_KEY;
    CK_ATTRIBUTE match[3];
    CK_ULONG n = 0;
    match[n].type = CShims_CKA_CLASS; match[n].pValue = &keyClass; match[n].ulValueLen = sizeof keyClass; n++;
    if (label != NULL) { match[n].type = CShims_CKA_LABEL; match[n].pValue = (void *)label; match[n].ulValueLen = labelLength; n++; }
    if (id != NULL) { match[n].type = CShims_CKA_ID; match[n].pValue = (void *)id; match[n].ulValueLen = idLength; n++; }
    CK_RV rv = f->C_FindObjectsInit(session, match, n);
    if (rv != CShims_CKR_OK) return rv;
    rv = f->C_FindObjects(session, found, max, count);
    CK_RV final = f->C_FindObjectsFinal(session);
    return rv != CShims_CKR_OK ? rv : final;
}

/* One attribute into `value` (capacity *length); *length becomes its size. A NULL value asks the size. */
static inline CK_RV CShims_P11_attribute(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object,
                                         CK_ULONG type, void *value, CK_ULONG *length) {
    CK_ATTRIBUTE attribute = { type, value, *length };
    CK_RV rv = f->C_GetAttributeValue(session, object, &attribute, 1);
    *length = attribute.ulValueLen;
    return rv;
}

/* EC_v1 inside the token: CKM_ECDH1_DERIVE (CKD_NULL, the 65-byte uncompressed point) into a session
 * secret of exactly 32 bytes, extractable and not sensitive (Apple's KDF runs outside the token), read
 * into `out` and destroyed at once, on success or failure. */
static inline CK_RV CShims_P11_ecdh(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                    const unsigned char *point, size_t pointLength, unsigned char *out) {
    CK_ECDH1_DERIVE_PARAMS params = { CShims_CKD_NULL, 0, NULL, pointLength, (CK_BYTE *)point };
    CK_MECHANISM mechanism = { CShims_CKM_ECDH1_DERIVE, &params, sizeof params };
    CK_ULONG secretClass = CShims_CKO_SECRET_KEY, secretType = CShims_CKK_GENERIC_SECRET, length = 32;
    CK_BBOOL no = 0, yes = 1;
    CK_ATTRIBUTE secret[] = {
        { CShims_CKA_CLASS, &secretClass, sizeof secretClass },
        { CShims_CKA_KEY_TYPE, &secretType, sizeof secretType },
        { CShims_CKA_TOKEN, &no, sizeof no },
        { CShims_CKA_SENSITIVE, &no, sizeof no },
        { CShims_CKA_EXTRACTABLE, &yes, sizeof yes },
        { CShims_CKA_VALUE_LEN, &length, sizeof length },
    };
    CK_OBJECT_HANDLE derived = 0;
    CK_RV rv = f->C_DeriveKey(session, &mechanism, key, secret, sizeof secret / sizeof secret[0], &derived);
    if (rv != CShims_CKR_OK) return rv;
    CK_ATTRIBUTE value = { CShims_CKA_VALUE, out, 32 };
    rv = f->C_GetAttributeValue(session, derived, &value, 1);
    CK_RV destroyed = f->C_DestroyObject(session, derived);
    if (rv == CShims_CKR_OK && value.ulValueLen != 32) rv = CShims_CKR_BUFFER_TOO_SMALL;
    return rv != CShims_CKR_OK ? rv : destroyed;
}

/* RSA_v1 with a module that implements OAEP with SHA-1 only (SoftHSM2 2.6): the raw RSA operation
 * (CKM_RSA_X_509, c^d mod n, the whole modulus-sized block) in the token; OAEP is then decoded here. */
static inline CK_RV CShims_P11_rawRSADecrypt(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                             const unsigned char *wrapped, size_t wrappedLength, unsigned char *out, CK_ULONG *outLength) {
    CK_MECHANISM mechanism = { CShims_CKM_RSA_X_509, NULL, 0 };
    CK_RV rv = f->C_DecryptInit(session, &mechanism, key);
    if (rv != CShims_CKR_OK) return rv;
    return f->C_Decrypt(session, (CK_BYTE *)wrapped, wrappedLength, out, outLength);
}

/* RSA_v1 inside the token: C_Decrypt with CKM_RSA_PKCS_OAEP (SHA-256, MGF1-SHA-256, no label). */
static inline CK_RV CShims_P11_oaepDecrypt(const CShims_CK_FUNCTION_LIST *f, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                           const unsigned char *wrapped, size_t wrappedLength, unsigned char *out, CK_ULONG *outLength) {
    CK_RSA_PKCS_OAEP_PARAMS params = { CShims_CKM_SHA256, CShims_CKG_MGF1_SHA256, CShims_CKZ_DATA_SPECIFIED, NULL, 0 };
    CK_MECHANISM mechanism = { CShims_CKM_RSA_PKCS_OAEP, &params, sizeof params };
    CK_RV rv = f->C_DecryptInit(session, &mechanism, key);
    if (rv != CShims_CKR_OK) return rv;
    return f->C_Decrypt(session, (CK_BYTE *)wrapped, wrappedLength, out, outLength);
}

#endif
