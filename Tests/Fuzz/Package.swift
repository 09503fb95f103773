// swift-tools-version:6.1
// The libFuzzer harnesses live in their own package so that building or testing the engine never
// builds them. Build them with run-fuzzers.sh (`swift build -c release --sanitize=fuzzer
// -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing`): `-enable-testing` lets
// `@testable import` reach the internal readers.
import PackageDescription

// libFuzzer supplies `main`; each harness only exports `LLVMFuzzerTestOneInput` (`@_cdecl`).
let harness: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

let package = Package(
    name: "ApplePayFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ApplePayDecryption", path: "../..")
    ],
    targets: [
        // The public token parser: any bytes, a PaymentToken or an ApplePayError.
        .executableTarget(
            name: "FuzzToken",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzToken", swiftSettings: harness),
        // The BER/CMS SignedData reader and the certificate issuer/serial reader.
        .executableTarget(
            name: "FuzzCMS",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzCMS", swiftSettings: harness),
        // The decrypted-payload model, fed plaintext as if it had just been decrypted.
        .executableTarget(
            name: "FuzzPayload",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzPayload", swiftSettings: harness),
        // The whole decrypt, with the bundled Vectors/ merchants and test root.
        .executableTarget(
            name: "FuzzDecrypt",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzDecrypt", swiftSettings: harness),
        // Google Pay: the token reader (with the documents inside it), the signedKey and signedMessage
        // documents alone, Google's root keys document, the decrypted message, and the whole decrypt.
        .executableTarget(
            name: "FuzzGooglePayToken",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzGooglePayToken", swiftSettings: harness),
        .executableTarget(
            name: "FuzzGooglePaySigned",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzGooglePaySigned", swiftSettings: harness),
        .executableTarget(
            name: "FuzzGooglePayRootKeys",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzGooglePayRootKeys", swiftSettings: harness),
        .executableTarget(
            name: "FuzzGooglePayMessage",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzGooglePayMessage", swiftSettings: harness),
        .executableTarget(
            name: "FuzzGooglePayDecrypt",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzGooglePayDecrypt", swiftSettings: harness),
        // Samsung Pay: the token reader (envelope, wrapper, compact JWE, protected header) with the front
        // door's shape dispatch, and the whole decrypt.
        .executableTarget(
            name: "FuzzSamsungPayToken",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzSamsungPayToken", swiftSettings: harness),
        .executableTarget(
            name: "FuzzSamsungPayDecrypt",
            dependencies: [.product(name: "ApplePayDecryption", package: "ApplePayDecryption")],
            path: "Sources/FuzzSamsungPayDecrypt", swiftSettings: harness),
    ]
)
