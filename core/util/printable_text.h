// Text from outside (a format name, a --set value, a string decoded from JSON, a file name) as a
// message may show it on a terminal: every control byte escaped, so that an ESC sequence in a
// value is shown, not obeyed (`formats --format $'e4m3:\e[31m'` coloured the terminal), and
// every byte that is not part of valid UTF-8 escaped, so that the message stays valid text.
#pragma once

#include <string>
#include <string_view>

namespace plab {

// C0 controls (tab, newline and carriage return included), DEL and the C1 controls
// (U+0080-U+009F, which some terminals obey as well) become \xNN or \u00NN; invalid UTF-8 bytes
// become \xNN; a backslash stays itself. Everything else is kept as it is.
std::string printableText(std::string_view text);

} // namespace plab
