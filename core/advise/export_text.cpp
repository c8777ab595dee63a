// The exports' shared text.
#include "advise/export_text.h"

#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>

namespace plab {

std::string quotedName(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string commentText(std::string text) {
    for (char& ch : text)
        if (ch == '\n' || ch == '\r')
            ch = ' ';
    return text;
}

std::string regexQuoted(const std::string& name) {
    static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
    return std::regex_replace(name, special, R"(\$&)");
}

std::string globQuoted(const std::string& name) {
    std::string out;
    for (char ch : name)
        if (ch == '*' || ch == '?' || ch == '[')
            out += std::string("[") + ch + "]";
        else
            out += ch;
    return out;
}

std::string describeCriteria(const RunAdvice& a) {
    std::ostringstream s;
    const AdviceCriteria& c = a.criteria;
    s << "ladder ";
    for (std::size_t i = 0; i < c.ladder.size(); ++i)
        s << (i ? "," : "") << c.ladder[i];
    s << "; max flushed " << c.maxFlushed * 100 << "%, max overflow " << c.maxOverflow * 100
      << "%, min SQNR " << c.minSqnrDb << " dB, margin " << c.margin << "; steps " << a.firstStep
      << ".." << a.lastStep;
    return s.str();
}

} // namespace plab
