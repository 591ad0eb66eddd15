throw "thrown!"
