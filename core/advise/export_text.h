// Text the advice's exports share: names quoted for YAML and Python, comment lines, and the
// header line that says which criteria the advice was judged by.
#pragma once

#include "advise/recipe_advice.h"

#include <string>

namespace plab {

// A name as a quoted string literal that YAML (a double-quoted scalar) and Python read back as
// the same text: JSON's escapes (\" \\ \n \u0007) are both languages' too. A module name may hold
// quotes or a newline (a ModuleDict key); unquoted it would end the line or the string and write
// YAML or Python of its own.
std::string quotedName(const std::string& text);
// Text for a comment line: a line break in a path or name must not end the comment.
std::string commentText(std::string text);
// A name matched exactly by a regular expression (its special characters escaped).
std::string regexQuoted(const std::string& name);
// A name matched exactly by a glob (fnmatch: * ? and [ taken literally as [*] [?] [[]).
std::string globQuoted(const std::string& name);
// "ladder nvfp4,...; max flushed 1%, ...; steps 1..200": the criteria and the window.
std::string describeCriteria(const RunAdvice& advice);

} // namespace plab
