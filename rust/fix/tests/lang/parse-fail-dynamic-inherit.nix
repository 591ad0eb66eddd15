{ inherit ${toString 1}; }
