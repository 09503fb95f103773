// Warnings that must be seen whatever --log-level says.
import Foundation
import Logging

/// A warning that must be seen whatever --log-level says: logged when the level admits warnings,
/// written straight to stderr otherwise.
func loudWarning(_ logger: Logger, _ text: String) {
    if logger.logLevel <= .warning {
        logger.warning("\(text)")
    } else {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// An error that must be seen whatever --log-level says (a failed key reload or root keys refresh).
func loudError(_ logger: Logger, _ text: String) {
    if logger.logLevel <= .error {
        logger.error("\(text)")
    } else {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
