# commentinvalid
